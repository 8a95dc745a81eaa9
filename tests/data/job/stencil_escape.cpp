// A candidate that tries to leave the sandbox before it computes: it writes a file, starts a
// program and opens a network socket. Its result is right only if all three were refused, so
// an unconfined run shows up as a wrong result (and leaves the file behind).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" void stencil2d(const float* in, float* out, int n, float alpha, double* change) {
  double sum = 0;
  const char* marker = std::getenv("R3_TEST_ESCAPE_FILE");
  float escaped = 0.0f;
  if (marker) {
    if (std::FILE* f = std::fopen(marker, "w")) {
      std::fputs("escaped\n", f);
      std::fclose(f);
      escaped += 1.0f;
    }
    if (std::system((std::string("touch ") + marker + ".exec").c_str()) == 0) escaped += 1.0f;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0) {
      ::close(fd);
      escaped += 1.0f;
    }
  }
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      int i = y * n + x;
      out[i] =
          escaped + in[i] + alpha * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] - 4.0f * in[i]);
      sum += out[i] > in[i] ? out[i] - in[i] : in[i] - out[i];
    }
  }
  *change = sum;
}
