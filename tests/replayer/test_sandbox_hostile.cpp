// The hostile-candidate corpus (tests/data/hostile/stencil_hostile.cpp) through the real sandbox
// with the host backend: one test per route out. Each must be contained (nothing outside
// changes: files, directories, processes, listeners, the host name; the sandbox child lives on),
// classified (stopped by the filter, named in the message, or refused and then right), and no
// secret may come back. Unconfined, the same candidates do get out: the checks can fail.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "r3/replay/sandbox.hpp"
#include "r3/replay/wire.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace {

using namespace r3::replay;
using r3::test::read_text_file;

constexpr const char* kSecret = "sk-r3-test-0123456789abcdef";

struct Route {
  int attack;
  const char* name;
};
void PrintTo(const Route& route, std::ostream* out) { *out << route.name; }

// A listening socket that must never see a connection.
class Listener {
 public:
  explicit Listener(int family, const std::string& path = "") {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (family == AF_INET) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      socklen_t size = sizeof a;
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &size);
      port_ = ntohs(a.sin_port);
    } else {
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
      ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    ::listen(fd_, 8);
  }
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }
  bool reached() const {
    int got = ::accept(fd_, nullptr, nullptr);
    if (got >= 0) ::close(got);
    return got >= 0;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class HostileCandidates : public ::testing::TestWithParam<Route> {
 protected:
  void SetUp() override {
    auto made = r3::test::record_demo(R3_TEST_R3, R3_TEST_EXAMPLE_STENCIL,
                                      (dir_ / "demo.h5").string(), 64, 2);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    std::filesystem::create_directories(outside_dir());
    { std::ofstream(victim()) << "original\n"; }
    ::chmod(victim().c_str(), 0600);
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("120"), nullptr};
    ASSERT_EQ(::posix_spawnp(&bystander_, "sleep", nullptr, nullptr, argv, environ), 0);
    ::gethostname(hostname_, sizeof hostname_ - 1);
    // Secrets a job would have in its environment: none may reach a candidate.
    ::setenv("OPENAI_API_KEY", kSecret, 1);
    ::setenv("R3_LLM_API_KEY", kSecret, 1);
    ::setenv("R3_TEST_SECRET_TOKEN", kSecret, 1);
  }
  void TearDown() override {
    ::kill(bystander_, SIGKILL);
    ::waitpid(bystander_, nullptr, 0);
    for (const char* name : {"OPENAI_API_KEY", "R3_LLM_API_KEY", "R3_TEST_SECRET_TOKEN"})
      ::unsetenv(name);
  }

  std::filesystem::path outside_dir() const { return dir_ / "outside"; }
  std::filesystem::path victim() const { return outside_dir() / "victim"; }
  std::string unix_path() const { return (dir_ / "listener.sock").string(); }

  SandboxSetup setup(bool confine) {
    SandboxSetup s;
    s.helper = R3_TEST_SANDBOX;
    s.capture = dir_ / "demo.h5";
    s.kernels = {{0, {}}};
    s.timeout_s = 20;
    s.confine = confine;
    return s;
  }
  Request request(int attack, int port) const {
    Request r;
    r.variant.source_name = "stencil_hostile.cpp";
    r.variant.source_text =
        read_text_file(std::string(R3_TEST_DATA_DIR) + "/hostile/stencil_hostile.cpp");
    r.variant.entry = "stencil2d";
    auto quoted = [](const std::filesystem::path& p) { return "\"" + p.string() + "\""; };
    r.variant.defines = {{"ATTACK", std::to_string(attack)},
                         {"OUTSIDE", quoted(victim())},
                         {"OUTSIDE_DIR", quoted(outside_dir())},
                         {"OUTSIDE_PID", std::to_string(bystander_)},
                         {"PORT", std::to_string(port)},
                         {"UNIX_PATH", quoted(unix_path())}};
    r.variant.passes = "default<O2>";
    r.options.repeats = 3;
    r.options.warmup = 1;
    return r;
  }

  // Everything outside as it was, and what differs.
  std::string changes_outside(const Listener& tcp, const Listener& local) const {
    std::string found;
    if (read_text_file(victim().string()) != "original\n") found += "the file was written; ";
    struct stat st {};
    if (::stat(victim().c_str(), &st) != 0 || (st.st_mode & 07777) != 0600)
      found += "the file's mode changed or it is gone; ";
    std::set<std::string> entries;
    for (const auto& e : std::filesystem::directory_iterator(outside_dir()))
      entries.insert(e.path().filename().string());
    if (entries != std::set<std::string>{"victim"}) found += "the directory changed; ";
    if (::kill(bystander_, 0) != 0) found += "the process outside was killed; ";
    if (tcp.reached()) found += "the TCP listener was reached; ";
    if (local.reached()) found += "the local listener was reached; ";
    char now[256] = {};
    ::gethostname(now, sizeof now - 1);
    if (std::string(now) != hostname_) found += "the host name changed; ";
    return found;
  }

  r3::test::TempDir dir_;
  pid_t bystander_ = -1;
  char hostname_[256] = {};
};

TEST_P(HostileCandidates, AreContainedAndClassified) {
  const Route route = GetParam();
  Listener tcp(AF_INET);
  Listener local(AF_UNIX, unix_path());
  Sandbox sandbox(setup(/*confine=*/true));
  if (!sandbox.confined()) GTEST_SKIP() << "this build or kernel has no seccomp filter";
  Evaluation e = sandbox.evaluate(request(route.attack, tcp.port()));
  SCOPED_TRACE(std::string(route.name) + ": " + std::string(to_string(e.outcome)) + ": " +
               e.message);
  EXPECT_EQ(changes_outside(tcp, local), "");
  // Stopped (a crash naming the system call) or refused (the stencil then comes out right);
  // never a wrong result, which is what an attempt that worked looks like.
  EXPECT_TRUE(e.outcome == Outcome::ok || e.outcome == Outcome::crash);
  if (e.outcome == Outcome::crash) {
    EXPECT_TRUE(e.message.find("a system call that candidates may not make") != std::string::npos ||
                e.message.find("ended its process before it returned") != std::string::npos);
  }
  EXPECT_EQ(e.message.find(kSecret), std::string::npos);
  EXPECT_LT(e.message.size(), 2000u);
  // The sandbox child lives on and the next candidate is unaffected.
  Evaluation next = sandbox.evaluate(request(0, tcp.port()));
  EXPECT_EQ(next.outcome, Outcome::ok) << next.message;
  EXPECT_EQ(sandbox.restarts(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Routes, HostileCandidates,
    ::testing::Values(Route{1, "FileWriteByTheCLibrary"}, Route{2, "FileWriteByOpenAndCreat"},
                      Route{3, "FileWriteByHandle"}, Route{4, "FileRenameLinkMkdirUnlink"},
                      Route{5, "Mount"}, Route{6, "ChmodChownXattr"},
                      Route{7, "SignalsToTheParent"}, Route{8, "SignalsToAProcessOutside"},
                      Route{9, "ParentMemoryByPtraceVmReadvProcMem"},
                      Route{10, "TcpSocket"}, Route{11, "LocalSocket"},
                      Route{12, "NetlinkPacketInet6Sockets"}, Route{13, "ForkBomb"},
                      Route{14, "CloneBomb"}, Route{15, "MemoryExhaustion"},
                      Route{16, "ForgedResultOnEveryDescriptor"},
                      Route{17, "KeyFromTheEnvironment"}, Route{18, "KeyFromProc"},
                      Route{19, "MegabytesToStdout"}, Route{20, "Reboot"},
                      Route{21, "Hostname"}),
    [](const ::testing::TestParamInfo<Route>& info) { return std::string(info.param.name); });

// The control: without confinement the same candidates do reach outside, and the checks above
// see it (file written, mode changed, listeners reached).
TEST_F(HostileCandidates, UnconfinedTheyGetOutAndTheChecksSeeIt) {
  Listener tcp(AF_INET);
  Listener local(AF_UNIX, unix_path());
  Sandbox sandbox(setup(/*confine=*/false));
  for (int attack : {1, 6, 10, 11}) {
    Evaluation e = sandbox.evaluate(request(attack, tcp.port()));
    EXPECT_EQ(e.outcome, Outcome::wrong_result) << attack << ": " << e.message;
  }
  std::string changes = changes_outside(tcp, local);
  for (const char* seen : {"the file was written", "the file's mode changed",
                           "the TCP listener was reached", "the local listener was reached"})
    EXPECT_NE(changes.find(seen), std::string::npos) << seen << " (saw: " << changes << ")";
}

// Each candidate process is the second process of a PID namespace of its own (its keeper's
// init is the first): it cannot name a process outside, nor be named from there by its number.
TEST_F(HostileCandidates, ACandidateProcessHasAPidNamespaceOfItsOwn) {
  Listener tcp(AF_INET);
  Sandbox sandbox(setup(/*confine=*/true));
  for (const auto& [layer, why] : sandbox.missing_layers())
    if (layer.starts_with("a PID namespace")) GTEST_SKIP() << "no PID namespaces here: " << why;
  for (int run = 0; run < 3; ++run) {
    Evaluation e = sandbox.evaluate(request(24, tcp.port()));
    EXPECT_EQ(e.outcome, Outcome::ok) << e.message;
  }
  // The control: unconfined, it runs under its number on the machine.
  Sandbox open(setup(/*confine=*/false));
  EXPECT_EQ(open.evaluate(request(24, tcp.port())).outcome, Outcome::wrong_result);
}

// The compiler runs in the child, which Landlock holds to the include path: a source that
// includes a file outside does not compile, and the diagnostic quotes nothing of that file.
TEST_F(HostileCandidates, AFileOutsideTheIncludePathCannotBeReadByTheCompiler) {
  const std::filesystem::path secret = outside_dir() / "secret.h";
  { std::ofstream(secret) << "#error TOPSECRET-CONTENT-42\n"; }
  Sandbox sandbox(setup(/*confine=*/true));
  for (const auto& [layer, why] : sandbox.missing_layers())
    if (layer.starts_with("Landlock")) GTEST_SKIP() << "no Landlock here: " << why;
  Request r = request(0, 0);
  r.variant.source_text = "#include \"" + secret.string() + "\"\n" + r.variant.source_text;
  Evaluation e = sandbox.evaluate(r);
  EXPECT_EQ(e.outcome, Outcome::compile_error) << e.message;
  EXPECT_EQ(e.message.find("TOPSECRET"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("secret.h:1:2: error"), std::string::npos) << e.message;
  // The control: unconfined, the same compile reads it (its diagnostic is located in it), and
  // the diagnostic still quotes nothing of it (only the candidate's own source is quoted).
  Sandbox open(setup(/*confine=*/false));
  Evaluation read = open.evaluate(r);
  EXPECT_NE(read.message.find("secret.h:1:2: error: (not quoted"), std::string::npos)
      << read.message;
  EXPECT_EQ(read.message.find("TOPSECRET"), std::string::npos) << read.message;
}

// A result kept from one run for the next (a static cache) wins nothing: every run starts
// afresh, so the memoising stencil takes as long as the same stencil without the memo.
TEST_F(HostileCandidates, AMemoisedResultIsNotFaster) {
  Listener tcp(AF_INET);
  Sandbox sandbox(setup(/*confine=*/true));
  Request memo = request(22, tcp.port());
  Request plain = request(23, tcp.port());
  memo.options.repeats = plain.options.repeats = 7;
  std::vector<double> ratios;
  for (int round = 0; round < 5; ++round) {  // interleaved
    Evaluation m = sandbox.evaluate(memo);
    Evaluation p = sandbox.evaluate(plain);
    ASSERT_EQ(m.outcome, Outcome::ok) << m.message;
    ASSERT_EQ(p.outcome, Outcome::ok) << p.message;
    ratios.push_back(m.run.seconds / p.run.seconds);
  }
  std::sort(ratios.begin(), ratios.end());
  // A memo that worked would make every round several times faster (copying 4096 floats
  // against 64 loop steps per element); the median stands for the rounds.
  EXPECT_GT(ratios[2], 0.5) << "the memoised candidate ran faster than it computes";
}

// A child that answers twice, or with a malformed message, fails that candidate only (the real
// child cannot be made to: candidate code never holds its pipe; this is the evaluator's side).
TEST_F(HostileCandidates, AForgedOrDuplicatedAnswerFailsThatCandidateOnly) {
  for (const char* mode : {"twice", "malformed"}) {
    std::filesystem::path fake = dir_ / (std::string("fake-sandbox-") + mode);
    Evaluation forged;  // the best possible result: ok in 0.1 us
    forged.run.seconds = 1e-7;
    { std::ofstream(dir_ / "forged.json") << wire::encode(forged); }
    {
      std::ofstream script(fake);
      script << "#!/usr/bin/env python3\n"
                "import json, os, struct, sys\n"
                "def read():\n"
                "    h = os.read(3, 8)\n"
                "    if len(h) < 8: sys.exit(0)\n"
                "    n = struct.unpack('<Q', h)[0]; b = b''\n"
                "    while len(b) < n: b += os.read(3, n - len(b))\n"
                "    return b\n"
                "def write(b):\n"
                "    os.write(4, struct.pack('<Q', len(b)) + b)\n"
                "read()\n"
                "write(json.dumps({'ok': True, 'placement': 'fake', 'confined': True}).encode())\n"
                "request = json.loads(read())\n"
                "answer = json.loads(open('"
           << (dir_ / "forged.json").string()
           << "').read())\n"
              "answer['sequence'] = request['sequence']\n"
              "answer = json.dumps(answer).encode()\n"
             << (std::string(mode) == "twice" ? "write(answer); write(answer)\n"
                                              : "write(b'{not json')\n")
             << "while True: read()\n";
    }
    std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
    SandboxSetup s = setup(true);
    s.helper = fake;
    Sandbox sandbox(s);
    // The duplicate shows at once, or as the answer to the next request: one of the two fails.
    std::string seen;
    for (int i = 0; i < 2; ++i) {
      Evaluation e = sandbox.evaluate(request(0, 0));
      if (e.outcome == Outcome::crash) seen += e.message + "; ";
    }
    EXPECT_NE(seen.find(std::string(mode) == "twice" ? "out of turn or more than once"
                                                     : "malformed"),
              std::string::npos)
        << mode << ": " << seen;
  }
}

}  // namespace
