#include "core/privacy/chacha20.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

using fedleaf::core::chacha20_block;
using fedleaf::core::ChaCha20Bits;
using fedleaf::core::ChaCha20Block;
using fedleaf::core::ChaCha20Key;
using fedleaf::core::ChaCha20Nonce;

namespace {

std::vector<std::uint8_t> hex(const std::string& text) {
  std::vector<std::uint8_t> out;
  std::string digits;
  for (char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  }
  for (std::size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

template <class Array>
Array array_of(const std::string& text) {
  const std::vector<std::uint8_t> bytes = hex(text);
  REQUIRE(bytes.size() == Array().size());
  Array out{};
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return out;
}

std::vector<std::uint8_t> bytes_of(const ChaCha20Block& block) {
  return {block.begin(), block.end()};
}

const char* const kSequentialKey =
    "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e "
    "1f";

}  // namespace

TEST_CASE("chacha20_block_matches_rfc_8439_section_2_3_2") {
  const auto key = array_of<ChaCha20Key>(kSequentialKey);
  const auto nonce = array_of<ChaCha20Nonce>("00 00 00 09 00 00 00 4a 00 00 00 00");
  CHECK(bytes_of(chacha20_block(key, 1, nonce)) ==
        hex("10 f1 e7 e4 d1 3b 59 15 50 0f dd 1f a3 20 71 c4"
            "c7 d1 f4 c7 33 c0 68 03 04 22 aa 9a c3 d4 6c 4e"
            "d2 82 64 46 07 9f aa 09 14 c2 d7 05 d9 8b 02 a2"
            "b5 12 9c d1 de 16 4e b9 cb d0 83 e8 a2 50 3c 4e"));
}

TEST_CASE("chacha20_block_matches_rfc_8439_appendix_a_1_vectors_1_to_5") {
  const std::string zero(64, '0');
  struct Vector {
    std::string key;
    std::uint32_t counter;
    std::string nonce;
    std::string block;
  };
  const std::vector<Vector> vectors = {
      {zero, 0, "000000000000000000000000",
       "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
       "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"},
      {zero, 1, "000000000000000000000000",
       "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
       "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"},
      {std::string(62, '0') + "01", 1, "000000000000000000000000",
       "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
       "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0"},
      {"00ff" + std::string(60, '0'), 2, "000000000000000000000000",
       "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
       "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096"},
      {zero, 0, "000000000000000000000002",
       "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
       "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d"},
  };
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    INFO("vector " << i + 1);
    const Vector& v = vectors[i];
    CHECK(bytes_of(chacha20_block(array_of<ChaCha20Key>(v.key), v.counter,
                                  array_of<ChaCha20Nonce>(v.nonce))) == hex(v.block));
  }
}

TEST_CASE("chacha20_keystream_encrypts_the_rfc_8439_section_2_4_2_sunscreen_text") {
  const auto key = array_of<ChaCha20Key>(kSequentialKey);
  const auto nonce = array_of<ChaCha20Nonce>("00 00 00 00 00 00 00 4a 00 00 00 00");
  const std::string plaintext =
      "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
      "future, sunscreen would be it.";
  std::vector<std::uint8_t> ciphertext;
  for (std::size_t i = 0; i < plaintext.size(); ++i) {
    const ChaCha20Block block = chacha20_block(key, static_cast<std::uint32_t>(1 + i / 64), nonce);
    ciphertext.push_back(static_cast<std::uint8_t>(plaintext[i]) ^ block[i % 64]);
  }
  CHECK(ciphertext == hex("6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81"
                          "e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b"
                          "f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57"
                          "16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8"
                          "07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e"
                          "52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36"
                          "5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42"
                          "87 4d"));
}

TEST_CASE("chacha20_bits_reads_the_keystream_from_counter_0_as_little_endian_words") {
  const auto key = array_of<ChaCha20Key>(kSequentialKey);
  const auto nonce = array_of<ChaCha20Nonce>("00 00 00 09 00 00 00 4a 00 00 00 00");
  ChaCha20Bits bits(key, nonce);
  for (std::uint32_t counter = 0; counter < 9; ++counter) {  // past two 4-block refills
    const ChaCha20Block block = chacha20_block(key, counter, nonce);
    for (int word = 0; word < 8; ++word) {
      std::uint64_t expected = 0;
      for (int b = 7; b >= 0; --b) expected = expected << 8 | block[8 * word + b];
      INFO("block " << counter << " word " << word);
      CHECK(bits.next() == expected);
    }
  }
  ChaCha20Bits fresh(key, nonce);  // a new object restarts the same stream
  CHECK(fresh.next() == ChaCha20Bits(key, nonce).next());
}

TEST_CASE("chacha20_first_blocks_are_each_nonces_block_0_and_seed_the_same_stream") {
  const auto key = array_of<ChaCha20Key>(kSequentialKey);
  ChaCha20Nonce nonces[fedleaf::core::kChaCha20Lanes];
  for (std::size_t lane = 0; lane < fedleaf::core::kChaCha20Lanes; ++lane) {
    nonces[lane] = array_of<ChaCha20Nonce>("00 00 00 09 00 00 00 4a 00 00 00 00");
    nonces[lane][11] = static_cast<std::uint8_t>(3 * lane);
  }
  fedleaf::core::ChaCha20Lanes lanes;
  fedleaf::core::chacha20_first_blocks(key, nonces, lanes);
  for (std::size_t lane = 0; lane < fedleaf::core::kChaCha20Lanes; ++lane) {
    INFO("lane " << lane);
    const ChaCha20Block block = chacha20_block(key, 0, nonces[lane]);
    for (int i = 0; i < 16; ++i) {
      std::uint32_t expected = 0;
      for (int b = 3; b >= 0; --b) expected = expected << 8 | block[4 * i + b];
      CHECK(lanes[i][lane] == expected);
    }
    // Seeded with that block, the stream is the plain one, past its later refills too.
    ChaCha20Bits seeded(key, nonces[lane], lanes, lane);
    ChaCha20Bits plain(key, nonces[lane]);
    for (int word = 0; word < 8 * 20; ++word) REQUIRE(seeded.next() == plain.next());
  }
}
