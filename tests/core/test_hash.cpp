#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <set>
#include <string>

#include "r3/hash.hpp"
#include "support/random_capture.hpp"

namespace {

// Contents are named by XXH3-128 (docs/capture-format.md): the same digest as the library's own,
// high word first in hex, so that other tools can check a capture.
TEST(Hash, IsXxh3With128BitsHighWordFirst) {
  std::mt19937_64 rng(13);
  for (std::size_t size : {0ul, 1ul, 16ul, 17ul, 240ul, 241ul, 100000ul}) {
    std::vector<std::byte> bytes = r3::test::random_bytes(rng, size);
    XXH128_hash_t reference = XXH3_128bits(bytes.data(), bytes.size());
    r3::Hash128 ours = r3::hash_bytes(bytes);
    EXPECT_EQ(ours.high, reference.high64) << size;
    EXPECT_EQ(ours.low, reference.low64) << size;
    char hex[33];
    std::snprintf(hex, sizeof hex, "%016llx%016llx",
                  static_cast<unsigned long long>(reference.high64),
                  static_cast<unsigned long long>(reference.low64));
    EXPECT_EQ(ours.hex(), hex) << size;
  }
}

TEST(Hash, HexRoundTripsAndIsLowerCase) {
  r3::Hash128 h = r3::hash_string("stencil");
  std::string hex = h.hex();
  ASSERT_EQ(hex.size(), 32u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(r3::Hash128::from_hex(hex), h);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(r3::Hash128::from_hex(upper), h);
}

TEST(Hash, FromHexRefusesWrongLengthAndDigits) {
  EXPECT_FALSE(r3::Hash128::from_hex("").has_value());
  EXPECT_FALSE(r3::Hash128::from_hex(std::string(31, 'a')).has_value());
  EXPECT_FALSE(r3::Hash128::from_hex(std::string(33, 'a')).has_value());
  EXPECT_FALSE(r3::Hash128::from_hex(std::string(31, 'a') + "g").has_value());
}

TEST(Hash, EqualBytesEqualHashAndOneBitChangesIt) {
  std::mt19937_64 rng(7);
  std::vector<std::byte> bytes = r3::test::random_bytes(rng, 10000);
  r3::Hash128 original = r3::hash_bytes(bytes);
  EXPECT_EQ(r3::hash_bytes(std::vector<std::byte>(bytes)), original);
  for (std::size_t position : {0ul, 4999ul, 9999ul}) {
    std::vector<std::byte> flipped = bytes;
    flipped[position] ^= std::byte{1};
    EXPECT_NE(r3::hash_bytes(flipped), original) << position;
  }
}

TEST(Hash, StreamingEqualsOneShot) {
  std::mt19937_64 rng(11);
  std::vector<std::byte> bytes = r3::test::random_bytes(rng, 1 << 20);
  r3::Hasher hasher;
  std::size_t offset = 0;
  for (std::size_t piece : {1ul, 63ul, 4096ul, 100000ul}) {
    hasher.update(bytes.data() + offset, piece);
    offset += piece;
  }
  hasher.update(bytes.data() + offset, bytes.size() - offset);
  EXPECT_EQ(hasher.digest(), r3::hash_bytes(bytes));
}

TEST(Hash, FieldsAreSeparated) {
  r3::Hasher a, b;
  a.update_field("ab").update_field("c");
  b.update_field("a").update_field("bc");
  EXPECT_NE(a.digest(), b.digest());
  r3::Hasher c, d;
  c.update("ab").update("c");
  d.update("a").update("bc");
  EXPECT_EQ(c.digest(), d.digest());  // plain updates concatenate
}

TEST(Hash, DistinctInputsGiveDistinctHashes) {
  std::set<r3::Hash128> seen;
  for (int i = 0; i < 10000; ++i) seen.insert(r3::hash_string(std::to_string(i)));
  seen.insert(r3::hash_bytes(nullptr, 0));
  EXPECT_EQ(seen.size(), 10001u);
}

}  // namespace
