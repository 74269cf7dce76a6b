# fedleaf_set_warnings(target): the warning set every fedleaf target compiles with.
function(fedleaf_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion)
endfunction()

# fedleaf_sanitize(target): ASan+UBSan when FEDLEAF_SANITIZE or FEDLEAF_FUZZ is on. Under
# FEDLEAF_FUZZ also libFuzzer's coverage instrumentation (fuzzer-no-link): without it the
# libraries a fuzz target calls are invisible to the fuzzer, which then mutates blindly.
function(fedleaf_sanitize target)
  if(FEDLEAF_SANITIZE OR FEDLEAF_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(FEDLEAF_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
