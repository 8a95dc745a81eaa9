// The MAP-Elites archive (cells, elites, islands, migration, parent selection) and the novelty
// filter (exact, whitespace- and comment-only duplicates, near-duplicates).
#include <gtest/gtest.h>

#include <map>

#include "r3/error.hpp"
#include "r3/evolve/archive.hpp"

namespace r3::evolve {
namespace {

Elite elite(std::uint64_t id, double time, double registers, double shared_memory = 0) {
  return {id, Hash128{id, 0}, time, {{"registers", registers}, {"shared_memory", shared_memory}}};
}

TEST(Archive, BucketsDescriptorsOnTheirScale) {
  Archive a({"registers", "shared_memory"}, 4, 1);
  // registers: 8..256 on a log scale, 4 bins of a factor 32^(1/4) ~ 2.38 each.
  EXPECT_EQ(a.cell(elite(1, 1, 8)), (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(a.cell(elite(1, 1, 32)), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(a.cell(elite(1, 1, 64)), (std::vector<std::size_t>{2, 0}));
  EXPECT_EQ(a.cell(elite(1, 1, 255, 48 * 1024)), (std::vector<std::size_t>{3, 3}));
  EXPECT_EQ(a.cell(elite(1, 1, 100000, 1e9)), (std::vector<std::size_t>{3, 3}));  // clamped
  EXPECT_THROW(Archive({"colour"}, 4, 1), Error);
}

TEST(Archive, KeepsTheFastestPerCell) {
  Archive a({"registers"}, 4, 1);
  EXPECT_TRUE(a.add(0, elite(1, 2.0, 32)));
  EXPECT_FALSE(a.add(0, elite(2, 3.0, 33)));  // same cell, slower
  EXPECT_TRUE(a.add(0, elite(3, 1.0, 34)));   // same cell, faster
  EXPECT_TRUE(a.add(0, elite(4, 9.0, 200)));  // a new cell, however slow
  EXPECT_EQ(a.size(0), 2u);
  ASSERT_NE(a.best(), nullptr);
  EXPECT_EQ(a.best()->id, 3u);
}

TEST(Archive, ParentsAreElitesAndTournamentsFavourFastOnes) {
  Archive a({"registers"}, 8, 1);
  a.add(0, elite(1, 1.0, 8));
  a.add(0, elite(2, 5.0, 64));
  a.add(0, elite(3, 9.0, 250));
  std::mt19937_64 rng(7);
  std::map<std::uint64_t, int> exploit, explore;
  for (int i = 0; i < 3000; ++i) {
    ++exploit[a.select_parent(0, 0.0, rng).id];
    ++explore[a.select_parent(0, 1.0, rng).id];
  }
  // Tournament of three: the fastest wins unless not drawn at all, P = 1 - (2/3)^3 = 0.70.
  EXPECT_NEAR(exploit[1] / 3000.0, 0.70, 0.05);
  EXPECT_LT(exploit[3], exploit[2]);
  // Pure exploration: uniform over the elites.
  for (std::uint64_t id : {1, 2, 3}) EXPECT_NEAR(explore[id] / 3000.0, 1.0 / 3, 0.05);
}

TEST(Archive, EmptyIslandHasNoParent) {
  Archive a({"registers"}, 4, 2);
  a.add(0, elite(1, 1.0, 8));
  std::mt19937_64 rng(1);
  EXPECT_THROW(a.select_parent(1, 0.0, rng), Error);
}

TEST(Archive, MigrationMovesEachIslandsBestAroundTheRing) {
  Archive a({"registers"}, 4, 3);
  a.add(0, elite(1, 1.0, 8));
  a.add(0, elite(2, 4.0, 200));
  a.add(1, elite(3, 2.0, 8));
  a.migrate();
  // Island 0's best (1, in the same cell as island 1's 3 and faster) replaces it there; island
  // 1's best (3) reaches island 2; island 2 had none to give.
  std::mt19937_64 rng(3);
  EXPECT_EQ(a.size(1), 1u);
  EXPECT_EQ(a.select_parent(1, 0.0, rng).id, 1u);
  EXPECT_EQ(a.size(2), 1u);
  EXPECT_EQ(a.select_parent(2, 0.0, rng).id, 3u);
  EXPECT_EQ(a.size(0), 2u);
}

TEST(Archive, MigratesEveryKGenerationsAsConfigured) {
  evolve::ArchiveOptions config;
  config.islands = 2;
  config.migration_interval = 3;
  config.descriptors = {"registers"};
  Archive a(config);
  a.add(0, elite(1, 1.0, 8));
  EXPECT_FALSE(a.end_generation());
  EXPECT_FALSE(a.end_generation());
  EXPECT_EQ(a.size(1), 0u);
  EXPECT_TRUE(a.end_generation());  // the third
  EXPECT_EQ(a.size(1), 1u);
  EXPECT_EQ(a.generation(), 3u);
  config.migration_interval = 0;
  Archive never(config);
  never.add(0, elite(1, 1.0, 8));
  for (int g = 0; g < 10; ++g) EXPECT_FALSE(never.end_generation());
  EXPECT_EQ(never.size(1), 0u);
}

const char* kKernel = R"(// scale a vector
__global__ void scale(int n, float a, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // one element per thread
  if (i < n) x[i] = a * x[i];
}
)";

TEST(Novelty, NormalisingDropsCommentsAndSpacingButNotMeaning) {
  EXPECT_EQ(NoveltyFilter::normalise("int  a = b /* why */ + c; // done\n"), "int a=b+c;");
  EXPECT_EQ(NoveltyFilter::normalise("s = \"a  //  b\";"), "s=\"a  //  b\";");
  EXPECT_EQ(NoveltyFilter::normalise("#define A 1\n#define B 2\nx"), "#define A 1\n#define B 2\nx");
  EXPECT_NE(NoveltyFilter::normalise("a - -b"), NoveltyFilter::normalise("a--b"))
      << "'- -' and '--' are different tokens";
}

TEST(Novelty, ExactAndCosmeticDuplicatesAreDuplicates) {
  NoveltyFilter filter(0.95);
  EXPECT_EQ(filter.check(kKernel), NoveltyFilter::Verdict::novel);
  filter.add(kKernel);
  EXPECT_EQ(filter.check(kKernel), NoveltyFilter::Verdict::duplicate);
  const std::string reformatted =
      "__global__ void scale(int n,float a,float* x){\n    int "
      "i=blockIdx.x*blockDim.x+threadIdx.x;\n"
      "    /* guard */ if(i<n) x[i]=a*x[i];\n}\n";
  EXPECT_EQ(filter.check(reformatted), NoveltyFilter::Verdict::duplicate);
}

TEST(Novelty, NearDuplicatesAreCaughtAboveTheThreshold) {
  // A long kernel with one constant changed: almost all token 5-grams are shared.
  std::string body;
  for (int k = 0; k < 40; ++k)
    body += "  acc += w" + std::to_string(k) + " * x[i + " + std::to_string(k) + "];\n";
  const std::string a = "__global__ void f(const float* x, float* y) {\n  float acc = 0;\n" + body +
                        "  y[0] = acc;\n}\n";
  std::string b = a;
  b.replace(b.find("x[i + 17]"), 9, "x[i + 71]");
  NoveltyFilter strict(0.95), loose(0.999);
  strict.add(a);
  loose.add(a);
  EXPECT_EQ(strict.check(b), NoveltyFilter::Verdict::near_duplicate);
  EXPECT_EQ(loose.check(b), NoveltyFilter::Verdict::novel);
  // A different kernel is novel for both.
  EXPECT_EQ(strict.check(kKernel), NoveltyFilter::Verdict::novel);
}

}  // namespace
}  // namespace r3::evolve
