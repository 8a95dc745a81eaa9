// Turning LLM answers into candidates: fenced code, SEARCH/REPLACE edits (exact and
// whitespace-tolerant), the reasons an answer is refused, and R3_TUNABLE declarations.
#include <gtest/gtest.h>

#include "r3/evolve/launch_block.hpp"
#include "r3/evolve/response.hpp"

namespace r3::evolve {
namespace {

const std::string kParent = R"(// saxpy
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST(Response, TakesTheFencedBlockThatDefinesTheEntry) {
  const std::string answer =
      "Use a grid-stride loop.\n```cuda\n__device__ float helper(float v) { return v; }\n// a much "
      "longer "
      "block that does not define the kernel at all, padding padding padding\n```\nand\n```cuda\n"
      "extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) {\n"
      "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) "
      "y[i] += a * x[i];\n"
      "}\n```\n";
  ParsedResponse parsed = parse_response(answer, "saxpy");
  EXPECT_TRUE(parsed.edits.empty());
  EXPECT_NE(parsed.code.find("gridDim.x"), std::string::npos);
  Candidate c = candidate_from_response(kParent, answer, "saxpy");
  EXPECT_TRUE(c.ok) << c.reason;
}

TEST(Response, WithoutADefiningBlockTakesTheLargest) {
  ParsedResponse parsed = parse_response("```\nshort\n```\n```cpp\nthe longer one\n```\n", "saxpy");
  EXPECT_EQ(parsed.code, "the longer one\n");
}

TEST(Response, AppliesSearchReplaceEditsExactly) {
  const std::string answer =
      "Fewer loads:\n<<<<<<< SEARCH\n  if (i < n) y[i] = a * x[i] + y[i];\n=======\n"
      "  if (i < n) y[i] = fmaf(a, x[i], y[i]);\n>>>>>>> REPLACE\n";
  ParsedResponse parsed = parse_response(answer, "saxpy");
  ASSERT_EQ(parsed.edits.size(), 1u);
  EXPECT_EQ(parsed.edits[0].search, "  if (i < n) y[i] = a * x[i] + y[i];");
  Candidate c = candidate_from_response(kParent, answer, "saxpy");
  ASSERT_TRUE(c.ok) << c.reason;
  EXPECT_NE(c.source.find("fmaf(a, x[i], y[i])"), std::string::npos);
  EXPECT_EQ(c.source.find("a * x[i] + y[i]"), std::string::npos);
  EXPECT_NE(c.source.find("// saxpy"), std::string::npos);  // the rest is kept
}

TEST(Response, EditsToleratDifferentWhitespace) {
  // The model re-indented and re-wrapped the lines it searches for.
  std::vector<Edit> edits = {
      {"int i = blockIdx.x * blockDim.x\n      + threadIdx.x;", "int i = threadIdx.x;"}};
  EditResult r = apply_edits(kParent, edits);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_NE(r.source.find("  int i = threadIdx.x;\n  if (i < n)"), std::string::npos) << r.source;
}

TEST(Response, SeveralEditsApplyInOrder) {
  std::vector<Edit> edits = {{"int i =", "const int i ="}, {"const int i", "const unsigned i"}};
  EditResult r = apply_edits(kParent, edits);
  ASSERT_TRUE(r.ok);
  EXPECT_NE(r.source.find("const unsigned i = blockIdx.x"), std::string::npos);
}

TEST(Response, AnEditThatDoesNotApplyIsRefusedWithItsNumber) {
  std::vector<Edit> edits = {{"int i =", "int j ="}, {"y[k] = 0;", "y[k] = 1;"}};
  EditResult r = apply_edits(kParent, edits);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("edit 2 does not apply"), std::string::npos) << r.reason;
  EXPECT_FALSE(apply_edits(kParent, {{"", "x"}}).ok);
}

TEST(Response, RefusesAnswersWithoutCode) {
  Candidate c = candidate_from_response(kParent, "I cannot make this faster.", "saxpy");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("no code"), std::string::npos);
}

TEST(Response, RefusesAnUnterminatedEditBlockAsNoCode) {
  Candidate c =
      candidate_from_response(kParent, "<<<<<<< SEARCH\nint i\n=======\nint j\n", "saxpy");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("no code"), std::string::npos) << c.reason;
}

TEST(Response, RefusesCodeThatDoesNotDefineTheKernel) {
  Candidate c =
      candidate_from_response(kParent, "```cuda\n__global__ void other(int n) {}\n```", "saxpy");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("does not define the kernel 'saxpy'"), std::string::npos) << c.reason;
}

TEST(Response, RefusesAChangedSignature) {
  const std::string answer =
      "```cuda\nextern \"C\" __global__ void saxpy(int n, double a, const float* x, float* y) {\n"
      "  int i = threadIdx.x; if (i < n) y[i] += a * x[i];\n}\n```";
  Candidate c = candidate_from_response(kParent, answer, "saxpy");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("signature of 'saxpy' changed"), std::string::npos) << c.reason;
}

TEST(Response, AcceptsRenamedParametersRestrictAndLaunchBounds) {
  EXPECT_TRUE(same_signature(
      "void saxpy(int n, float a, const float* x, float* y)",
      "void __launch_bounds__(256) saxpy(int count, float alpha, const float* __restrict__ in, "
      "float *__restrict__ out)"));
  EXPECT_FALSE(same_signature("void k(int n, float* y)", "void k(int n, double* y)"));
  EXPECT_FALSE(same_signature("void k(int n, float* y)", "void k(int n, float* y, int extra)"));
  EXPECT_TRUE(same_signature("void k(Map<int, float> m)", "void k(Map<int,float> table)"));
}

TEST(Response, RefusesAnAnswerThatChangesNothing) {
  std::string reformatted = kParent;
  reformatted.replace(reformatted.find("  int i"), 2, "    ");
  Candidate c = candidate_from_response(kParent, "```cuda\n" + reformatted + "```", "saxpy");
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.reason, "nothing changed");
}

TEST(Response, FindsTheEntrySignatureNotACall) {
  const std::string source =
      "#include <x>\n__device__ int f(int);\nint g() { return saxpy(1); }\n"
      "template <int N>\n__global__ void\nsaxpy(int n,\n   float* y) {\n  y[0] = n;\n}\n";
  EXPECT_EQ(entry_signature(source, "saxpy"),
            "template <int N> __global__ void saxpy(int n, float* y)");
  EXPECT_EQ(entry_signature(source, "missing"), "");
}

TEST(Tunables, ParsesBothValueSyntaxesAndAddsTheDefault) {
  const std::string source =
      "R3_TUNABLE(TILE, 16, 8 16 32)\nR3_TUNABLE(UNROLL, 4, 1, 2, 8)\n"
      "#define MY_R3_TUNABLE(x) x\nMY_R3_TUNABLE(nope, 1, 2)\nR3_TUNABLE(TILE, 8, 8)\n"
      "R3_TUNABLE(BAD)\nR3_TUNABLE(USE_X, false, true false)\n";
  std::vector<Tunable> t = parse_tunables(source);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], (Tunable{"TILE", "16", {"8", "16", "32"}}));
  EXPECT_EQ(t[1], (Tunable{"UNROLL", "4", {"4", "1", "2", "8"}}));
  EXPECT_EQ(t[2], (Tunable{"USE_X", "false", {"true", "false"}}));
}

}  // namespace
}  // namespace r3::evolve

namespace r3::evolve {
namespace {

TEST(LaunchBlock, TheDeclarationIsFoundAndItsSizesEvaluated) {
  const std::string source =
      "#ifndef R3_LAUNCH_BLOCK\n#define R3_LAUNCH_BLOCK(...)\n#endif\n"
      "R3_TUNABLE(TILE, 16, 8 16 32)\nR3_LAUNCH_BLOCK(TILE, (TILE / 2) * ROWS, 1)\n";
  auto block = parse_launch_block(source);
  ASSERT_TRUE(block.has_value()) << "the guard's '(...)' is not a declaration; the next is";
  EXPECT_EQ(*block, (BlockExpressions{"TILE", "(TILE / 2) * ROWS", "1"}));
  EXPECT_EQ(names_in((*block)[1]), (std::vector<std::string>{"TILE", "ROWS"}));
  const std::map<std::string, std::string> values = {{"TILE", "32"}, {"ROWS", "2*2"}};
  EXPECT_EQ(evaluate_size((*block)[1], values), 64) << "a value may be an expression too";
  EXPECT_EQ(evaluate_size("TILE - -4 + 16u", values), 52);
  EXPECT_FALSE(evaluate_size("TILE / (ROWS - 4)", values)) << "division by zero";
  EXPECT_FALSE(evaluate_size("WIDTH", values)) << "an unknown name";
  EXPECT_FALSE(evaluate_size("TILE +", values));
  EXPECT_FALSE(evaluate_size("16.5", values));
  EXPECT_FALSE(evaluate_size("A", {{"A", "A"}})) << "a name defined by itself";
  EXPECT_FALSE(parse_launch_block("MY_R3_LAUNCH_BLOCK(1, 2, 3)"));
  EXPECT_FALSE(parse_launch_block("R3_LAUNCH_BLOCK(1, 2)"));
}

}  // namespace
}  // namespace r3::evolve

namespace r3::evolve {
namespace {

// Candidate code may not reach outside the kernel's include path: an include its parent did
// not have must be a plain "name" or <name>, not an absolute path, not '..', not computed.
TEST(Response, ACandidateMayNotIncludeFilesFromOutside) {
  const std::string parent =
      "#include \"../common/helper.h\"\n#include <cstdio>\n__global__ void k(float* a) {}\n";
  auto with = [&](const std::string& line) { return line + "\n" + parent + "// changed\n"; };
  EXPECT_EQ(include_problem(parent, with("#include <cstdint>")), "");
  EXPECT_EQ(include_problem(parent, with("#include \"tile.h\" // mine")), "");
  EXPECT_EQ(include_problem(parent, parent + "\n"), "") << "its parent's own includes stay";
  for (const char* outside :
       {"#include \"/etc/shadow\"", "#  include </etc/passwd>", "#include \"../../secret.h\"",
        "#include \"a/../../b.h\"", "#include_next \"/root/.ssh/id_rsa\"", "#import \"/x\"",
        "#include SECRET_PATH", "#embed \"key.bin\"", "#include \"dir/..\""}) {
    std::string why = include_problem(parent, with(outside));
    EXPECT_NE(why, "") << outside;
  }
  // Written so that a reader of lines does not see the directive the preprocessor sees: after a
  // comment, spliced across lines, as a digraph or trigraph, with comments inside it.
  for (const char* hidden :
       {"/**/#include \"/etc/shadow\"", "/* a\n */ #include \"/etc/shadow\"",
        "#incl\\\nude \"/etc/shadow\"", "#\\  \ninclude \"/etc/shadow\"",
        "#include \\\n\"/etc/shadow\"", "%:include \"/etc/shadow\"", "?\?=include </etc/shadow>",
        "# /* c */ include /* c */ \"/etc/shadow\"", "#include /*\n*/ \"/dev/zero\"",
        "const char* s = \"/*\";\n#include \"/dev/stdin\"\n// */",
        "auto r = R\"x( /* )x\";\n#include \"/etc/shadow\"", "%:  include_next \"../x.h\"",
        "%\\\n:include \"/etc/shadow\"",
        // Line ends a reader of "\n" does not see (found by an adversarial helper): Clang and
        // GCC splice at a backslash before a lone CR, Clang reads "\n\r" as one line end, and
        // both read a NUL as a blank; GCC reads \u0075 in a name as u.
        "#incl\\\rude \"/etc/shadow\"", "#incl\\\n\rude \"/etc/shadow\"",
        "#include \"..\\\n\r/secret.h\"", "#incl\\u0075de \"/etc/shadow\""}) {
    EXPECT_NE(include_problem(parent, with(hidden)), "") << hidden;
  }
  const std::string nul_after_hash = std::string("#") + '\0' + "include \"/etc/shadow\"";
  EXPECT_NE(include_problem(parent, with(nul_after_hash)), "");
  EXPECT_NE(include_problem(parent, with("int a;\rint b;")).find("carriage return"), std::string::npos);
  EXPECT_EQ(include_problem(parent, with("#include \"tile.h\"\r\nint a;\r\n")), "")
      << "CRLF line ends are fine";
  // What only looks like one, with a plain file, is no problem.
  EXPECT_EQ(include_problem(parent, with("// we #include \"tile.h\" below\n#include \"tile.h\"")),
            "");
  EXPECT_EQ(include_problem(parent, with("#define STR(x) #x\nint a = 1 % 2; // 100%:ok")), "");
  Candidate c = candidate_from_response(
      parent, "```cuda\n#include \"/etc/shadow\"\n__global__ void k(float* a) { a[0] = 1; }\n```",
      "k");
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("include path"), std::string::npos) << c.reason;
}

// The sandbox quotes a compile error's text only from the candidate's own files, which are its
// source and the files its #line directives name (an application unit's pieces). A #line naming
// a file beside the source, then an #include of it, would have that file quoted back line by
// line (Clang: "./key.txt:1:1: error: ... AKIA..."): a candidate may renumber its lines and name
// only the files its parent names.
TEST(Response, ACandidateMayNotNameNewFilesInLineDirectives) {
  const std::string parent =
      "#line 33 \"app.cu\"\n__global__ void k(float* a) {}\n#line 50 \"app.cu\"\n";
  auto with = [&](const std::string& line) { return line + "\n" + parent + "// changed\n"; };
  for (const char* fine : {"#line 12", "#line 40 \"app.cu\"", "# 41 \"app.cu\" 2",
                           "// step #1: unroll", "int x = 3; // see #12", "#  line 7"}) {
    EXPECT_EQ(include_problem(parent, with(fine)), "") << fine;
  }
  for (const char* leaking :
       {"#line 1 \"key.txt\"\n#include \"key.txt\"", "# 1 \"key.txt\"", "# 1 \"key.txt\" 1 3",
        "/**/#line 1 \"key.txt\"", "%:line 1 \"key.txt\"", "#li\\\nne 1 \"key.txt\"",
        "#line 1 FILE", "#line N \"app.cu\"", "#line 1 \"app\\x2ecu\""}) {
    EXPECT_NE(include_problem(parent, with(leaking)), "") << leaking;
  }
  EXPECT_NE(include_problem("__global__ void k(float* a) {}\n",
                            "#line 1 \"app.cu\"\n__global__ void k(float* a) {}\n"),
            "")
      << "a file its parent does not name";
}

}  // namespace
}  // namespace r3::evolve
