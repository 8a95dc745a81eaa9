// The built-in mutators on background threads of rank 0. evolve::mutate parses a parent source
// with Clang and compiles every rewrite before offering it: 0.3-1 s for a CUDA kernel, during
// which the search's thread proposed nothing and the evaluators ran dry (busy 10-22% in those
// generations on an H100). The search asks for a parent's mutations ahead of need — the original
// at the start, each source as it enters the archive — and takes them when it picks that parent.
// With one thread, sources entered the archive faster than it mutated them on four H200s (rank 0
// waited 2-9 s per 4000-candidate run): several threads mutate different parents at once (each
// evolve::mutate has its own Clang instance; the CUDA headers' precompiled header is made once,
// under its own lock). A parent's mutations are the same whichever thread made them and whenever,
// so what the search proposes, and what --resume replays, do not depend on the timing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "r3/evolve/mutators.hpp"
#include "r3/hash.hpp"

namespace r3::tune {

// What evolve::mutate takes, for one parent source.
struct MutationRequest {
  // The request's key: requests with the same key are made once. One worker serves every kernel,
  // whose entries, blocks and template arguments differ: the search keys a source's hash with
  // its kernel.
  Hash128 parent;
  std::string text;
  std::string file_name;
  std::string entry;
  evolve::SourceLanguage language = evolve::SourceLanguage::cpp;
  std::vector<std::string> mutators;
  evolve::MutationContext context;
};

class MutationWorker {
 public:
  // Requests made ahead and not yet started beyond this are dropped, the oldest first (the
  // newest sources are the likeliest parents; a dropped one is made when it is taken).
  static constexpr std::size_t kQueued = 16;
  static constexpr std::size_t kSpeculative = 8;  // the same, for speculative requests
  // Speculative mutations made and not asked for again are kept up to this many (the oldest
  // forgotten first): most proposed sources never enter the archive.
  static constexpr std::size_t kSpeculativeKept = 64;
  static constexpr std::chrono::milliseconds kWaitSlice{2};

  explicit MutationWorker(std::size_t threads = 1);
  ~MutationWorker();  // finishes the parents being mutated, drops the rest
  MutationWorker(const MutationWorker&) = delete;
  MutationWorker& operator=(const MutationWorker&) = delete;

  // How sure the search is that it will ask for a parent's mutations: a source in the archive
  // may be picked as a parent from now on; a source the mutators just made might enter the
  // archive once it has run (asked for then, it would often be picked before it was mutated: a
  // wait of 0.3-1 s at a CUDA parent, most of the evaluators' idle time in a run's first
  // generations). An LLM's source is never asked for before it has run (Search::propose_sources).
  enum class Need { likely, speculative };
  // Made when a thread has time, newest first, speculative ones only when no likely one waits;
  // nothing if that parent was asked for before (a speculative request asked for again as likely
  // moves up).
  void prefetch(MutationRequest request, Need need = Need::likely);
  // The parent's mutations, now: made ahead, or made first of all while the caller waits (on
  // the first worker thread free); while it waits, `while_waiting` is called every few
  // milliseconds (the job hands out work and takes results meanwhile). Rethrows what
  // evolve::mutate threw.
  evolve::MutationReport take(MutationRequest request,
                              const std::function<void()>& while_waiting = {});

  std::size_t made_ahead() const;  // taken without waiting for them to be started
  // Whether a parent's mutations were ever asked for (ahead or taken): its source was parsed, or
  // is about to be, by Clang in this process.
  bool asked_for(const Hash128& parent) const;
  double waited_seconds() const;    // in take() for mutations not made yet, summed

 private:
  struct Made {
    evolve::MutationReport report;
    std::exception_ptr error;
  };
  void loop();
  // No longer counts `parent` among the speculative results kept (it is asked for now).
  void forget_speculative(const Hash128& parent);
  // Puts `request` first in `queue`, dropping (and forgetting) its last beyond `most`.
  void push_front(std::deque<MutationRequest>& queue, MutationRequest request, std::size_t most);

  mutable std::mutex mutex_;  // guards everything below but threads_; no other lock is taken with it
  std::condition_variable changed_;
  std::deque<MutationRequest> queued_;           // front: next to be made
  std::deque<MutationRequest> speculative_;      // made when queued_ is empty, front first
  std::set<Hash128> likely_;                     // asked for as likely (or taken), not taken yet
  std::deque<Hash128> speculative_made_;         // made speculatively, oldest first
  std::map<Hash128, std::optional<Made>> made_;  // asked for; empty while queued or being made
  std::set<Hash128> asked_;                      // every parent ever asked for
  std::size_t made_ahead_ = 0;
  double waited_seconds_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace r3::tune
