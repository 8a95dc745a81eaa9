// Base64 (RFC 4648, with padding): binary data (a compiled kernel's image) inside the JSON
// messages between processes and ranks, which carry text only.
#pragma once

#include <string>
#include <string_view>

namespace r3 {

std::string base64_encode(std::string_view bytes);
// Throws FormatError naming `what` for text that is not base64 (wrong length, a character
// outside the alphabet, padding anywhere but at the end).
std::string base64_decode(std::string_view text, std::string_view what = "base64 text");

}  // namespace r3
