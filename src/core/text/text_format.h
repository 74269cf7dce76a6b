// Text forms shared by error messages and safetensors metadata.
//
//   throw InvalidInput("tensor " + in_quotes(name) + " ...");   // tensor 'emb/weight' ...
//   metadata["total_weight"] = format_double_exact(w);        // reads back to the same double
//   metadata["loss"] = format_decimal(loss);                  // 9 significant digits
#pragma once

#include <string>
#include <string_view>

namespace fedleaf::core {

// `text` in single quotes, as messages name tensors and fields. Text from outside may hold any
// byte: control characters are written \xHH, a quote \' and a backslash \\, so a message stays one
// line, shows where the name ends, and survives what() (a C string, which a NUL would cut short:
// a tensor named "emb/weight\0zz" was reported as 'emb/weight, and the rule was lost).
std::string in_quotes(std::string_view text);
// Shortest-safe decimal (%.17g) that strtod reads back to exactly `value`.
std::string format_double_exact(double value);
// A metric for people and logs: 9 significant digits (%.9g), enough for any float.
std::string format_decimal(double value);

}  // namespace fedleaf::core
