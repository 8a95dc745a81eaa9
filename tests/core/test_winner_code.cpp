// The winner's code beside its best.yaml (best.code + best.cubin) and the base64 that carries
// code images in the messages between processes: what is written is read back byte for byte,
// and a damaged or foreign file is refused with its name.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "r3/base64.hpp"
#include "r3/error.hpp"
#include "r3/winner_code_file.hpp"
#include "support/temp_dir.hpp"

namespace {

using r3::test::TempDir;

TEST(Base64, MatchesTheRfcVectorsAndRoundTripsAnyBytes) {
  const std::pair<const char*, const char*> rfc4648[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : rfc4648) {
    EXPECT_EQ(r3::base64_encode(plain), encoded);
    EXPECT_EQ(r3::base64_decode(encoded), plain);
  }
  std::mt19937 rng(5);
  for (std::size_t size : {1u, 2u, 3u, 255u, 256u, 4097u}) {
    std::string bytes(size, '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    EXPECT_EQ(r3::base64_decode(r3::base64_encode(bytes)), bytes) << size;
  }
}

TEST(Base64, RefusesWhatIsNotBase64) {
  for (const char* bad : {"Zg=", "Z===", "Zm9v!mFy", "Zg==Zg==", "=Zm9"}) {
    try {
      r3::base64_decode(bad, "code image");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const r3::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("code image is not base64"), std::string::npos) << bad;
    }
  }
}

r3::run::CodeRecord sample_code() {
  std::string image(
      "\x7f"
      "ELF",
      4);
  for (int b = 0; b < 300; ++b) image += static_cast<char>(b);
  return {17, 1, "sm_90", "13.0", "_Z9heat_stepPKfPfii", image};
}

TEST(WinnerCodeFile, IsReadBackAsWritten) {
  TempDir dir;
  EXPECT_FALSE(r3::read_winner_code(dir.path()).has_value());
  r3::write_winner_code(dir.path(), sample_code());
  const auto read = r3::read_winner_code(dir.path());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read, sample_code());
  r3::remove_winner_code(dir.path());
  EXPECT_FALSE(r3::read_winner_code(dir.path()).has_value());
  EXPECT_FALSE(std::filesystem::exists(dir / "best.cubin"));
}

// What r3 apply would otherwise load into an application: an image that is not the one the
// run confirmed, or a file that points elsewhere.
TEST(WinnerCodeFile, ADamagedOrForeignFileIsRefusedWithItsName) {
  TempDir dir;
  r3::write_winner_code(dir.path(), sample_code());
  std::ifstream in(dir / "best.code");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  auto expect_refused = [&](const std::string& code_text, const std::string& why) {
    std::ofstream(dir / "best.code", std::ios::trunc) << code_text;
    try {
      r3::read_winner_code(dir.path());
      ADD_FAILURE() << "accepted: " << code_text;
    } catch (const r3::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("best.code"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  {
    std::ofstream(dir / "best.cubin", std::ios::binary | std::ios::app) << "x";
    expect_refused(text, "does not match the hash");
    r3::write_winner_code(dir.path(), sample_code());
  }
  std::string escaping = text;
  escaping.replace(escaping.find("best.cubin"), 10, "../best.cubin");
  expect_refused(escaping, "must name a file beside it");
  expect_refused("r3-apply-manifest 1\n", "not an r3 winner code file");
  expect_refused("r3-winner-code 2\n", "newer than this r3 reads");
  std::string no_function = text;
  no_function.erase(
      no_function.find("function"),
      no_function.find('\n', no_function.find("function")) + 1 - no_function.find("function"));
  expect_refused(no_function, "no 'function' line");
}

}  // namespace
