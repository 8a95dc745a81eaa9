// Bayesian optimisation over a Space: a GP surrogate on warped log(time) (a stationary kernel
// plus a linear and quadratic trend over the numeric parameters), log-EI and/or UCB times a
// feasibility model learned from failures, batches of proposals for idle workers.
//
// The optimiser holds no state but its observations (in order) and the pending proposals: a
// run resumed by observing the same configurations and outcomes in the same order proposes
// exactly what the uninterrupted run would have, for the same seed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "r3/bo/space.hpp"

namespace r3::bo {

class FitPool;

struct Outcome {
  bool ok = true;
  double time = 0;      // when ok: positive, any unit (the search models time / fastest)
  std::string failure;  // when not: the class of failure (compile error, timeout, ...)
  // What evaluating it cost (seconds, any unit the same for all); 0: not known. Only the ratio
  // of failures' to successes' costs is used (Options::cost_aware).
  double cost = 0;

  static Outcome success(double time, double cost = 0) { return Outcome{true, time, "", cost}; }
  static Outcome failed(std::string why, double cost = 0) {
    return Outcome{false, 0, std::move(why), cost};
  }
};

struct Observation {
  Configuration configuration;
  Outcome outcome;
};

// portfolio (the default): log-EI and UCB in turn, one pick each, by the number of configurations
// known (a resumed run takes the same turns). Neither alone is best on every table of
// bench/bo_sim (UCB finds Rosenbrock-4D's narrow valley floor, log-EI Hartmann-6's optimum); the
// portfolio needed fewer evaluations than log-EI on 7 of the 8 figures of the side-by-side
// bench's four tables (100 seeds, batch 1; docs/tune-yaml.md), more on Hartmann-6 (216.5 to 164).
// Half the local searches climb each acquisition, so that a proposal of an even size, which
// starts on the same one every time (the tuning job's batches), still searches the other's
// region: at batch 2, Rosenbrock-4D took 214 evaluations instead of 290 when the local search
// followed the first pick's acquisition alone (bench/bo_sim, 100 seeds; the other tables within
// a step of where they were).
enum class Acquisition { log_ei, ucb, portfolio };
enum class InitialDesign { sobol, latin_hypercube };
// How a batch of proposals is formed: the Kriging believer (each proposal observed at the
// model's mean before the next is chosen) is the one implemented.
enum class BatchStrategy { kriging_believer };

struct Options {
  std::uint64_t seed = 1;
  // How many configurations the design chooses before the model does, counting what was
  // observed or pending before the first proposal (a job's defaults) among them: the centre
  // (or the defaults) and one more. Until the model has two successes, further picks are
  // random. bench/bo_sim (seeds 1-400, evaluations to within 5% / 1%, means, Wilcoxon
  // signed-rank p), 4 -> 2 with exploit_predicted_improvement: SYRK 9.94/16.47 -> 7.90/15.31,
  // SYR2K 8.29/12.43 -> 6.16/11.28, GEMM 1% 8.75 -> 6.82 (p <= 0.002 each), 2MM the same,
  // stencil 19.64/25.98 -> 20.88/26.93 (p > 0.5), matmul 15.72/22.22 -> 15.97/21.32
  // (p > 0.38); 4 -> 2 alone: matmul 13.72/18.89 (p < 0.001), the others within half an
  // evaluation (p > 0.08; GEMM 1% 9.51). Batches begin with the design and random points
  // before any model, so there the two differ little: at batch 4 (seeds 1-200) GEMM 1% 10.26 ->
  // 8.55 (p < 0.001), the others p > 0.09. The synthetic tables (seeds 1-100) lose to 5%:
  // Branin 24.2 -> 29.4 (median 17 -> 31, p = 0.04; 1% 37.9 -> 36.6), Rosenbrock-4D 214 -> 225
  // (p = 0.16); Hartmann-6 214 -> 209 (p = 0.28). 3 gained the GPU tables less (matmul 1%
  // 21.97).
  std::size_t initial_samples = 2;
  InitialDesign initial_design = InitialDesign::sobol;
  // The design's first point is the middle of every range (Space::centre_unit; a constraint
  // that cuts it off moves it to the nearest valid configuration) rather than a random one: a
  // central design point, the default configuration of a tuner that knows none. In a job a
  // source's defaults are pending before its levels propose and take that first place; only a
  // level whose defaults never run (a recorded kernel under a tune.yaml `block:`) starts from
  // the centre. bench/bo_sim (seeds 1-400, evaluations to within 5% /
  // 1%), five random points -> the centre and three: PolyBench GEMM 13/13 -> 1/11, 2MM 5/9 ->
  // 1/1 (the centre, 32x32, is within 1.1% and 0.5% of their optima), stencil 21/23 -> 15/21
  // (p < 0.001 both); SYRK 9/18 -> 10/18 (p = 0.09), SYR2K 8/15 -> 8/14, matmul 14/23 ->
  // 14/23 (p > 0.5), whose centre is 3.1x its optimum. With five points and the centre, matmul
  // lost 1-2 (p = 0.01, 0.003); four random points instead of five changed no table (p > 0.07).
  bool centre_point = true;
  Acquisition acquisition = Acquisition::portfolio;
  double ucb_beta = 2.0;
  // The portfolio's hand-over: where the best log-EI of a proposal's pool is below
  // log(handover_improvement) (an expected improvement of that many of the target's standard
  // deviations), log-EI's turn goes to UCB with weight handover_ucb_beta, which stays nearer the
  // model's mean than the UCB turn. Once EI has nothing left near what the model knows, its pick
  // is a gamble on the far tails of the least known points: on the PolyBench tables the search
  // had found the fast block width and measured the neighbours its model could rank, and the 1%
  // configuration (a dip of 2% at one BY the model smoothed over) came from the UCB turns alone,
  // its log-EI turns going to corners 10-45x slower. Only while fewer than handover_stall
  // observations have passed without a new best: EI's far picks are how the search leaves a
  // local optimum, and on Hartmann-6 (a 6^6 grid) the seeds caught in one escaped after about
  // 200 evaluations with them and not within 500 without (a prototype with no stall limit,
  // median to 5% over 200 seeds 219.5 -> 483.5; with it 100 seeds, 219.5 -> 224).
  // bench/bo_sim, evaluations to within 5% / 1% (medians over seeds 1-500, Mann-Whitney p of
  // off against on), off -> 0.05: SYRK 1% 20 -> 19 (means 21.3 -> 19.8, p < 0.001), SYR2K 1%
  // 16 -> 15 (16.2 -> 15.3, p < 0.001), GEMM 1% 13 -> 12 (p = 0.6), matmul 1% 22 -> 21 (23.2 ->
  // 22.2, p = 0.27), 2MM and every 5% median unchanged; stencil 1% 23 -> 24 (p = 0.59), its
  // slowest tenth slower (90th percentile to 5% 49 -> 65). Thresholds of 0.03 to 0.1 gave the
  // same; UCB's own weight (2) for the hand-over kept SYR2K at 16. 0: off.
  double handover_improvement = 0.05;
  double handover_ucb_beta = 1.0;
  std::size_t handover_stall = 8;
  // Local refinement: once this many observations have passed without a new best, UCB's picks
  // (its own turns, not log-EI's handed over) are made among the configurations that differ
  // from the best one in one parameter (any other value of it; a parameter that conditions
  // others settles them anew, a sequence takes its one-step moves), which join the candidates,
  // until as many of them as there are parameters were picked since the best; log-EI keeps its
  // far picks. A model fitted to a few dozen points can be sure a change does not pay because
  // it did not elsewhere (PolyBench SYRK: a 2% dip at one block height that it smoothed over),
  // and a global search then circles the best point without trying its own neighbours; the
  // limit keeps a search caught in a local optimum from spending UCB's picks on all of its
  // one-parameter changes. bench/bo_sim (evaluations to within 5% / 1%, seeds 1-400, medians
  // and means, Wilcoxon signed-rank p), off -> 8 (before the quadratic trend): SYRK 10/18
  // (11.0/19.3) -> 10/18 (10.6/18.9, p < 0.001 both), GEMM 1% 11 -> 10 (11.0 -> 10.1,
  // p < 0.001); SYR2K, 2MM, stencil and matmul unchanged (p > 0.1). Without the limit
  // Hartmann-6 went to 253 (medians to 5%, 100 seeds; 224.5 with it, p < 0.001), its seeds
  // caught in a local optimum spending UCB's picks on the optimum's 30 one-parameter changes.
  // 8 -> 3 (with the quadratic trend; means): SYRK 10.25/19.12 -> 9.82/18.59 (p < 0.001,
  // 0.018), SYR2K 9.11/14.52 -> 8.60/14.14 (p = 0.005, 0.036), GEMM 1% 10.04 -> 8.75
  // (p < 0.001), 2MM and stencil unchanged (p > 0.7), matmul 15.22/21.91 -> 15.65/22.18
  // (p = 0.16, 0.48); at batch 4 (200 seeds) GEMM 1% 14.1 -> 10.3 (p < 0.001), stencil
  // 23.1/30.6 -> 20.1/28.2 (p = 0.015, 0.047), matmul 19.3/26.1 -> 20.4/27.3 (p = 0.09, 0.15);
  // at batch 16 stencil 5% 35.4 -> 34.7 (p = 0.004), the others unchanged (p > 0.09).
  // Synthetic tables (100 seeds, medians to 5%): Rosenbrock-4D 228 -> 210 (p = 0.008),
  // Hartmann-6 212.5 -> 222.5 (p = 0.07; to 1% p = 0.04), Branin 17 -> 17. Before the quadratic
  // trend, 2, 4 or 6 had cost matmul 1-3 evaluations to 1%; now 1 costs it 16.64/23.23
  // (p = 0.018, 0.029), 2 16.05/22.41 (p = 0.10, 0.47), 4 gains the others as much as 3 with
  // matmul 15.92/22.20 (p = 0.06, 0.59), 5 gains less (GEMM 1%: 9.71). Changes of two
  // parameters, or of one step only, lost the gains or cost stencil (measured with 8);
  // UCB's every pick among the best's one-parameter changes, without the stall or the limit
  // (a trust region of radius one), gained SYRK, SYR2K, GEMM and stencil more (1%: 17.75,
  // 13.92, 8.68, 23.05) but cost matmul 15.22/21.91 -> 17.14/25.66 (p = 0.006, < 0.001), whose
  // optimum is two changes away from the points near it. 0: off.
  std::size_t refine_stall = 3;
  // Plateau bisection (plateau.hpp): where the best and the other end of the latest step on a
  // plateau differ by less than this fraction of the best's time (the other end: the latest
  // observation, if it came after the best, within that of it, and moved an ordinal parameter;
  // else the fastest success before the best), the proposal's first pick goes half the way from
  // the best to the end of each moved parameter's range in the step's direction (or to the
  // nearest value measured on that line), else, if that is measured or leaves the space, half
  // the way from the other end away from the best (unless the model ranks it last: known or
  // probably failing). On a plateau a smooth model says the next value is as good as the last
  // and walks it one step a time: PolyBench SYR2K's optimum is a block height of 4-16 at width
  // 8, 1% below heights 32-128, which the search reached first, with height 1 2.6x slower; it
  // took 128 -> 64 -> 32 -> 16, a measurement each. bench/bo_sim (seeds 1-400, evaluations to
  // within 5% / 1%, means, Wilcoxon signed-rank p), off -> 0.005: SYRK 9.82/18.59 ->
  // 9.94/16.47 (p = 0.014, < 0.001), SYR2K 8.60/14.14 -> 8.29/12.43 (p < 0.001 both), GEMM
  // and 2MM the same searches, stencil 19.78/26.09 -> 19.64/25.98 and matmul 15.65/22.18 ->
  // 15.72/22.22 (p > 0.15); medians to 1%: SYRK 18 -> 16, SYR2K 15 -> 12. At
  // batch 4 (200 seeds) SYR2K 1% 16.25 -> 15.78 (p < 0.001), the others p > 0.2; at batch 16
  // SYR2K 1% 20.41 -> 20.18 (p = 0.009), SYRK 1% 28.93 -> 29.09 and matmul 37.05/47.29 ->
  // 37.14/47.40 (p = 0.03-0.045). Synthetic tables (100 seeds, medians to 5% / 1%): Branin
  // 17/41.5 -> 17/44 (p = 0.18), Rosenbrock-4D the same, Hartmann-6 222.5/227.5 -> 221/227.
  // 0.01 gained SYR2K more (12.18 to 1%) but cost stencil (1% 26.43, p = 0.03); 0.0025 gained
  // stencil (1% 25.33, p = 0.003) but less elsewhere (SYRK 1% 17.32, SYR2K 12.64). A step
  // only after a new best (not a later step that did not beat it): SYR2K 1% 13.02, SYRK
  // 16.88; the forward probe alone: 13.01 and 17.19; every step, however large, taken
  // again at the same size (a pattern move) or twice it: gains on one table paid on another
  // (SYRK 1% 17.8 but SYR2K 14.7; matmul 20.8 but SYRK 19.0). 0: off.
  double plateau_bisection = 0.005;
  // Pair completion (pairs.hpp): once refine_stall observations have passed without a new best
  // and no plateau probe is due, the proposal's first pick is a configuration that makes two
  // one-parameter changes of the best at once, each of which was measured within this fraction
  // of the best's time (the completion UCB ranks first, not known, not probably failing), until
  // as many completions as there are parameters were taken (measured or pending). A smooth model
  // predicts the completion as if the two slowdowns added up; where they interact, only a
  // measurement says otherwise: on the H200 matmul table most searches first reach tile depth
  // 8 without padding, 2.7% off the optimum, whose depth 32 alone is 16% slower and padding
  // alone 7% slower, both together 3% faster. bench/bo_sim (seeds 1-400, evaluations to within
  // 5% / 1%, medians, means in brackets, Wilcoxon signed-rank p), 0 -> 0.2 with the other
  // defaults: matmul 8/17 (12.70/17.39) -> 8/14 (13.16/16.94), stencil 18/24 (20.62/26.39) ->
  // 18/26 (22.42/28.91), the PolyBench tables within 0.1 of their means. In drafts (before the
  // other two changes below), tolerances 0.1 and 0.3 gained matmul less (1% medians 18.5 and
  // 16.5 against 16, seeds 1-100); completing around every success within 0.5% or 2% of the
  // best, ordering by the variations' times or by the mean, or a stall of 1, 2 or 5 gained no
  // more. 0: off.
  double pair_completion = 0.2;
  // Where the surrogate's mean puts an unmeasured configuration below the best measured time,
  // log-EI's turn measures the one it puts fastest (not one that probably fails or that it
  // cannot tell from a measured one) instead of its own pick. Expected improvement prefers a
  // far point whose spread is large to a near one predicted a little faster, and on the
  // PolyBench tables the model of a few points was most often right about the latter: the
  // block shapes near the best were predicted faster proposals before log-EI tried them.
  // bench/bo_sim (seeds 1-400, evaluations to within 5% / 1%, means, Wilcoxon signed-rank p),
  // off -> on with initial_samples 2: SYRK 9.32/15.75 -> 7.90/15.31 (p < 0.001, 0.035), SYR2K
  // 7.96/12.40 -> 6.16/11.28, GEMM 1% 9.51 -> 6.82 (p < 0.001 each), 2MM 1/1 both, stencil
  // 19.59/25.84 -> 20.88/26.93 (p = 0.27, 0.51), but matmul 13.72/18.89 -> 15.97/21.32
  // (p < 0.001): there the first model pick, with two points measured, becomes a neighbour of
  // the better one predicted faster by a hundredth of a standard deviation, where log-EI's
  // went towards the corner of the largest tiles, the optimum. With 4 initial samples it gained
  // less: SYR2K 5% 8.29 -> 7.78 (p = 0.013), GEMM 1% 8.75 -> 7.11 (p < 0.001), the others
  // p > 0.14. Asking the prediction to beat the best by 0.1 / 0.3 of its standard deviation
  // (matmul 1%: 20.11 / 19.36) or at least 3 successes first (20.72) gave up most of the
  // PolyBench gains (SYR2K 5%: 7.17 / 7.70 / 7.33); on UCB's turns too it cost stencil and
  // matmul (1%: 27.36, 22.68). false: off.
  bool exploit_predicted_improvement = true;
  // ... only once the time model has at least this many successes per parameter of the space:
  // with two points in seven parameters the mean's fastest point is a neighbour of the better
  // one, predicted faster by a hundredth of a standard deviation (the matmul figures above);
  // with four parameters (the PolyBench launch tables) 0.5 exploits from the first model, as
  // before. bench/bo_sim (seeds 1-400, medians, means in brackets), 0 -> 0.5 with the other
  // defaults: matmul 13/19 (16.24/21.41) -> 8/14 (13.16/16.94), stencil (6 parameters: from 3
  // successes) 18/25 (22.07/28.43) -> 18/26 (22.42/28.91), the PolyBench tables the same
  // searches. In drafts, exploiting on alternate log-EI turns, or only up to d or 2d successes,
  // gained matmul less; 1 (from d successes) cost SYRK and SYR2K 1-2 evaluations to 5%. 0: from
  // the first model.
  double exploit_successes_per_parameter = 0.5;
  // The surrogate's linear trend over the numeric parameters: the prior variance of each slope
  // (fitted per parameter from there); 0: no trend. bench/bo_sim measured 0.1 (with 5 initial
  // samples) faster to within 5% on the GPU tables and no slower elsewhere (bench/README.md).
  double trend = 0.1;
  // The trend's second order (gp.hpp, Hyperparameters::quadratic_weight): the value the weight
  // of a quadratic function of the numeric positions is centred on (fitted from there); 0, or
  // no trend: none. bench/bo_sim (seeds 1-400, evaluations to within 5% / 1%, means), 0 ->
  // 0.03: the H200 matmul table 16.8/23.8 -> 15.2/21.9 (p = 0.002, 0.008), SYR2K 5% 8.75 -> 9.11
  // (p = 0.017), SYRK, GEMM, 2MM and stencil unchanged (p > 0.17); Hartmann-6 (median to 5%,
  // 100 seeds) 224.5 -> 212.5 (p = 0.03), Branin and Rosenbrock-4D unchanged (p > 0.1). 0.1
  // gained matmul more (to 5%: 14.7) but cost SYRK and SYR2K 0.3-0.5 evaluations to 5%
  // (p < 0.05); centred on 0.01 it changed nothing (p > 0.1). Its prior variance grows
  // towards the corners of the space faster than the slopes' does, so a corner the data point
  // at is tried sooner; matmul's optimum is one (every tile dimension largest). At batch 4
  // (200 seeds) matmul gains likewise (to 5% 22.5 -> 19.3, p = 0.019) and SYR2K pays more (to
  // 5% 9.2 -> 9.9, p = 0.004; to 1% 15.7 -> 16.5, p = 0.043); at batch 16 only matmul's 1%
  // figure moves (49.7 -> 47.7, p = 0.022).
  double quadratic_trend = 0.03;
  // The GP's target blends the Box-Cox-warped times with their normal scores (ranks), weighing
  // the scores n / (n + rank_warp) for n successes (gp.hpp, warp_times); 0: Box-Cox alone.
  // Near the optimum times differ by a percent, which Box-Cox squeezes together and ranks keep
  // apart. bench/bo_sim (evaluations to within 5% / 1%, 100 seeds; 30 for the synthetic tables),
  // Box-Cox alone -> 20: SYR2K 8.5/22 -> 9/15, SYRK 10/30 -> 11.5/26, GEMM 12/13 -> 11/12,
  // 2MM 4/9.5 -> 4/8, stencil 19/24 -> 18.5/22.5, matmul 17/23.5 -> 18/27, Hartmann-6 218.5 ->
  // 144, Rosenbrock-4D 211 -> 177, Branin 18/42.5 -> 18/42. Off by default: where the
  // times are a smooth function of the parameters that Box-Cox and the trend model exactly, and
  // results come 32 proposals late as in the tuning job, it proposes more failing
  // configurations (the test KeepingWithinThePendingRoomFailsLessWhenResultsComeLate, seeds
  // 1-10: 374 failures against 250 to find every working one), and a failure on a GPU can cost
  // a CUDA context.
  double rank_warp = 0;
  // A candidate whose kernel correlation with a point the GP conditions on is at least this
  // counts as known: the model cannot tell it from a point already measured (a register-limit
  // variant of a measured block shape, once the fit has learnt that the limit does not matter),
  // and measuring it would tell next to nothing. It ranks below every candidate that is not
  // known (and above those that probably fail), so it is still proposed when nothing else is
  // left. Expected improvement and UCB otherwise favour such points near the incumbent: their
  // mean is the incumbent's and their spread not quite zero. bench/bo_sim (evaluations to within
  // 5% / 1%, 100 seeds), 0 -> 0.995: SYRK 10/30 -> 10/24, SYR2K 8.5/22 -> 8.5/18, stencil 19/24
  // -> 19/23, GEMM, 2MM, matmul and Branin within half a step. Lower thresholds gained no more
  // there and counted as known the points between measured ones that the model only
  // interpolates: on a synthetic valley (write_valley_table() in tests/bo) 0.985 took 14
  // evaluations to 1% at the median but 43 at the upper quartile (26 and 28 without), as the search
  // left the incumbent's neighbourhood for everything else first. Pending points and those
  // picked earlier in the batch count as points measured (the Kriging believer leaves a pick's
  // variant its mean, and expected improvement where that is below the best): bench/bo_sim
  // --batch 4, SYR2K 9/20 -> 9/18, stencil 24/29 -> 23.5/28.5, the others unchanged; with
  // results 32 proposals late on the demo-shaped space (KeepingWithinThePendingRoom...), 74 ->
  // 69 failures within the room, 131 -> 119 in every slot. 0: off.
  double known_correlation = 0.995;
  // A parameter whose every change alone among the best quarter of the measured points (pairs
  // that differ in it and nothing else; of the max_fit_points the fit takes, which hold the best
  // half of that many: past 128 successes, the best 33) moved the time by at most this fraction
  // counts as inert: the time model's fit puts its lengthscale at the bound (irrelevant) where
  // that costs the fit at most kInertNats of log posterior (inert_inputs(), GaussianProcess::fit
  // in src/gp.hpp).
  // A register limit above what the kernel uses changes nothing, but with a few dozen points the
  // fit does not learn that alone: it keeps the limit's lengthscale short, every value a function
  // of its own, and the search measures the limit's variants of its best shapes, one by one,
  // before it moves on. Once irrelevant, those variants count as known (known_correlation).
  // Only pairs among the best count: a parameter that does nothing where the kernel is slow may
  // matter where it is fast. The likelihood guard keeps a parameter that changes nothing at one
  // point but much elsewhere. bench/bo_sim (seeds 1-500, evaluations to within 5% / 1%), 0 ->
  // 0.01: PolyBench SYRK 11/22 -> 11/20, SYR2K 9/18 -> 9/16 (1%: p < 0.001 both); GEMM 12/13,
  // 2MM 5/9, stencil 22/23, matmul 13/22 unchanged (p > 0.8); 0.005 gave the same, as did a
  // guard of 3 nats. The tolerance is what keeps the other tables whole (a prototype, seeds
  // 1-300): with the likelihood alone to judge, pairs anywhere, stencil lost 22/24 -> 27/29.5 and
  // matmul 22 -> 24 at 1%; pairs among the best, matmul still 22 -> 24 (mean 22.6 -> 26.5): its
  // PAD changes the time 7% at one tile shape and makes the optimum at another. 0: off.
  double inert_tolerance = 0.01;
  // The surrogate also takes as inputs the quantities the known constraints bound (Quantity:
  // threads per block "BX*BY" of "BX*BY<=1024", a tile's shared memory), each on its own
  // lengthscale and outside the linear trend: a kernel's time often follows such a quantity
  // along a diagonal of its parameters, which a kernel over the parameters alone learns only
  // point by point. Off by default, because it trades one table for another: bench/bo_sim
  // (evaluations to within 5% / 1%, medians over seeds 1-500, means in brackets where the
  // medians hide it; Mann-Whitney p of the runs off against on), off -> on: SYRK 1% 24 -> 24
  // (23.6 -> 22.0, p < 0.001), SYR2K 1% 18 -> 16 (16.4 -> 14.7, p < 0.001), stencil 21/24 ->
  // 21/23, but GEMM 1% 13 -> 13 (12.7 -> 13.5, p = 0.015), matmul 16/24 -> 17/25.5 (1%: 25.2
  // -> 27.6, p = 0.035), 2MM 5/9 -> 5/10; a prior that keeps their lengthscales long unless
  // the data say otherwise lost the gains with the losses.
  bool constraint_quantities = false;
  // The centre of the log-normal prior on the surrogate's lengthscales (positions in [0, 1]);
  // 0: sqrt(d) for d numeric inputs (gp.hpp, default_lengthscale_centre). With few observations
  // a short centre makes the fit take each value of a parameter that does not matter (a
  // register limit, a cache switch) for a function of its own, which the search then measures
  // value by value. bench/bo_sim (evaluations to within 5% / 1%, medians over seeds 1-500;
  // Mann-Whitney p), the earlier fixed 0.5 -> sqrt(d): SYRK 12/24 -> 11/22 (1%: p < 0.001),
  // matmul 16/24 -> 13/22 (p < 0.001, 0.002), SYR2K 9/18, GEMM 12/13, 2MM 5/9 unchanged,
  // stencil 21/24 -> 22/23 (p = 0.32, 0.79); but slower where every parameter matters and the
  // function is smooth: Branin 16/38 -> 18/40 (200 seeds; 5%: p < 0.001), Rosenbrock-4D 215 ->
  // 237 (150 seeds; p = 0.005). Fixed centres of 1 and 2 gave the GPU tables' gains only in
  // part (1: matmul alone) and lost Branin as much.
  double lengthscale_centre = 0;
  // While the time model has at most hyperparameter_draws_until successes, the acquisition is
  // the mean, over this many draws from the posterior of the lengthscales and categorical and
  // sequence weights (GaussianProcess::draw; the signal, noise and trend as fitted), of each draw's
  // acquisition, instead of the acquisition at the fitted hyperparameters alone (Snoek,
  // Larochelle and Adams 2012 integrate theirs so). With a handful of points the maximum of the
  // likelihood is one guess among many that explain them as well, and which parameters matter
  // is what the first evaluations after the initial design are for. bench/bo_sim (evaluations
  // to within 5% / 1%, medians over seeds 1-400, means in brackets; Mann-Whitney p), 0 -> 16:
  // PolyBench SYRK 11/19 -> 9/18 (11.4/19.9 -> 10.2/18.9, p < 0.001, 0.001), SYR2K 9/15.5 ->
  // 8/15 (9.3/15.3 -> 8.5/14.4, p < 0.001 both), stencil 22/24 -> 21/23 (29.4/32.1 ->
  // 26.6/29.8, p = 0.011, 0.10), 2MM 5/9 unchanged; but matmul 12.5/21 -> 14/23 (14.8/21.9 ->
  // 16.6/23.8, p = 0.003, 0.026) and GEMM 12/12 -> 13/13 (1%: p = 0.03): the fitted trend sends
  // the first picks to the corner of the largest tiles, where matmul's optimum is, and the
  // draws' spread makes other regions worth a look too. At batch 4 (seeds 1-200): SYRK 13/22
  // -> 10/22, SYR2K 11/17 -> 9/17, stencil 28/29 -> 23/27 (5%: p = 0.038, 0.030, 0.008), and
  // matmul 16/26 -> 17/25 (p = 0.27, 0.63). Branin 18/43.5 -> 15.5/40 (p = 0.022 at 5%),
  // Hartmann-6 224/226.5 -> 216/223, Rosenbrock-4D 212 -> 226 (p = 0.2; 100 seeds). Drawing the
  // signal, noise and trend too lost matmul more; so did fewer draws (4); the draws' limit at
  // 7, 8, 16 or 24 successes traded the same. Each draw's GP is made whole at each proposal:
  // with at most hyperparameter_draws_until rows that costs little. 0: the fit alone.
  std::size_t hyperparameter_draws = 16;
  std::size_t hyperparameter_draws_until = 10;
  // Whether log-EI's turns average over the draws too; by default only UCB's do (also log-EI's
  // handed over to UCB), and log-EI's take the fitted hyperparameters alone: the fitted model
  // follows its trend where the draws' spread makes every region worth a look (the matmul
  // figures above), and the portfolio keeps one acquisition of each. bench/bo_sim (seeds
  // 1-400, medians, means in brackets), true -> false with the other defaults: matmul 11/17
  // (15.68/20.43) -> 8/14 (13.16/16.94); but SYRK 7/15 (8.01/15.34) -> 8/15 (8.59/15.44), SYR2K
  // 5/11 (6.16/11.26) -> 6/12 (6.62/11.81), stencil 17/24 (21.21/27.45) -> 18/26 (22.42/28.91).
  // In a draft that also changed the refinement, no draws at all gained matmul more (7/13) but
  // cost SYRK and SYR2K more (9/15, 8/13); draws on log-EI's turns alone, 9/15 and 7/13.
  bool draws_for_log_ei = false;
  BatchStrategy batch = BatchStrategy::kriging_believer;
  // A configuration the feasibility model is sure fails is not proposed: P(feasible) below
  // this where the model has seen enough around it (its variance there under a quarter of what
  // it is far from every observation). Once a small space's working points are all measured, the
  // rest is failures it has learnt to tell apart (on two GPUs, a parameter level went on to
  // evaluate 200 of them, 41 losing their CUDA context); proposing fewer then hands the budget
  // to other levels and sources. 0: propose every point.
  double min_feasibility = 0.01;
  // How many configurations may be pending (proposed, not yet observed) per observation, at
  // least initial_samples or 4, whichever is more: pending_room() says how many more. A
  // pipelined job observes late (in generation order, behind the slowest candidate in flight),
  // and an optimiser that fills every batch meanwhile proposes on a model that has not seen its
  // own last proposals' failures: on a 1152-point synthetic of the demo's parameter space with
  // results 32 proposals late it made 408 failures before finding the 192 working points (52
  // with no delay). The caller gives
  // the room it leaves to other work, and comes back for more only when there is none.
  // Cost-aware, the share is divided by a proposal's expected cost (success rate + failure
  // rate x cost_aware's r): on two H200s one level lost 7 contexts in 5 generations, each
  // one's successor still preparing when the next came. 0: no limit.
  double pending_per_observation = 0.25;
  // Failures weighed by what they cost (Outcome::cost): with r the mean cost of this
  // optimiser's failures over its successes' (at least 1), the acquisition is per unit of
  // expected cost, P + (1 - P) r, and a point is sure to fail below min(1/2, r x
  // min_feasibility). On two H200s one parameter level lost 37 CUDA contexts (about 2 s each,
  // 200 of its 10 ms candidates) going through the rest of its 288 configurations once its
  // working ones were measured, which its model had seen fail (the block it ran with changed).
  // Nothing changes where failures cost what successes do, or costs are not given.
  bool cost_aware = true;
  // Failures since the last success costing more than 20 times the successes' mean, after
  // which the optimiser proposes nothing more (until a success still in flight comes in);
  // after the first, it has at most one configuration pending (with cost_aware). On four
  // H200s, 25 CUDA contexts were lost (2-6 s each, against 10 ms per candidate) by four
  // parameter levels, one losing 10 and another 12: once their working points were measured,
  // the configurations left were failures their model, made with other blocks, could not tell
  // apart; read off their outcomes in observation order, 3 would have stopped them after 10.
  // It acts only on what is observed: the next such run lost 74, most in bursts a level had in
  // flight before its first loss was observed. 0: no limit.
  std::size_t max_costly_failures = 3;
  std::size_t random_candidates = 512;  // random points in each proposal's candidate pool
  std::size_t local_search_starts = 8;  // best candidates improved by neighbourhood search
  std::size_t local_search_steps = 6;
  // Points the local searches may score per proposal once the GP conditions on more than 128
  // rows: this many at 128, scaled by (128 / rows)^2 beyond, so that what they cost, which
  // grows with the square of the rows (a new point's column), stays what it is at 128 rather
  // than growing ninefold by the 384-row cap. They stop at the first step past it, the starts
  // ranked best having gone first. 0: no limit.
  std::size_t local_search_points = 512;
  std::size_t max_gp_points = 384;   // observations the GP conditions on (best first)
  std::size_t max_fit_points = 128;  // observations its hyperparameters are fitted to
  int fit_evaluations = 120;         // marginal-likelihood evaluations per fit
  // The hyperparameters lag the history by this many observations (successes for the time
  // model): a proposal uses those
  // fitted at the fit point of the history as it was `fit_lag` observations ago (conditioned on
  // everything since), so that fit_ahead() has started that fit a generation or more before it
  // is needed rather than at the end of the last one. A simulated 2-evaluator job then waited
  // 1.89 s of 5.9 s for fits instead of 4.85 s of 9.4 s, but bench/bo_sim needed more
  // evaluations to get within 5% (lag 1: stencil 19.5 -> 20.5, matmul 16 -> 17; 4: 24, 18.5).
  std::size_t fit_lag = 0;
  // Threads for fit_ahead() (shared by many optimizers); none: every fit in propose().
  std::shared_ptr<FitPool> fit_pool;
};

class Optimizer {
 public:
  Optimizer(Space space, Options options);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  const Space& space() const { return space_; }
  const Options& options() const { return options_; }

  // Records the outcome of a configuration (pending or not). Throws r3::Error for a
  // configuration that is not valid in the space.
  void observe(const Configuration& configuration, const Outcome& outcome);

  // Starts on options().fit_pool the fits the next propose() needs for the history as it is
  // now, so that propose() finds them done; nothing without a pool. The proposals do not
  // change: a fit depends on the history alone.
  void fit_ahead();

  // Up to `count` configurations for idle workers: valid, distinct, neither observed nor
  // pending; they become pending. Fewer only when the space has no more to offer than points
  // the feasibility model is sure fail (Options::min_feasibility).
  std::vector<Configuration> propose(std::size_t count);
  // How many more configurations may be pending within Options::pending_per_observation
  // (SIZE_MAX without a limit). propose() itself does not stop there: the caller decides
  // whether other work can take the rest.
  std::size_t pending_room() const;
  // Whether its pending room is one for failing in a row (8 failures since the last success, or
  // one costly failure since then; only once it has had a success): a caller should then not give it more than its room even where nothing else
  // would use the batch, since an idle evaluator costs less than a lost GPU context.
  bool failing_in_a_row() const;
  // Marks a configuration that is being evaluated without having been proposed here (e.g. the
  // defaults, run with a new source), so that propose() does not offer it too.
  void add_pending(const Configuration& configuration);
  // Forgets the pending proposals (their evaluations were lost).
  void clear_pending();

  const std::vector<Observation>& observations() const { return observations_; }
  const std::vector<Configuration>& pending() const { return pending_; }
  // The fastest successful observation.
  std::optional<Observation> best() const;

  // Where the last propose() spent its time (seconds).
  struct Timing {
    double fit = 0;         // hyperparameters
    double condition = 0;   // the models brought up to the history
    double candidates = 0;  // candidate pool, posterior, local search
    double select = 0;      // the batch
    std::size_t pool = 0;   // points scored
    std::size_t new_points = 0;  // of which the GP had no column kept
    std::size_t gp_rows = 0;     // observations the GP conditioned on (at most max_gp_points)
    std::size_t declined = 0;    // points not proposed: sure to fail (Options::min_feasibility)
  };
  const Timing& last_timing() const { return timing_; }

  // What it keeps between proposals: the hyperparameters last fitted and at which size of the
  // history, what is observed or pending, a small space's list (optimizer.cpp).
  struct Memo;

 private:
  Space space_;
  Options options_;
  std::vector<Observation> observations_;
  std::vector<Configuration> pending_;
  Timing timing_;
  std::unique_ptr<Memo> memo_;
};

}  // namespace r3::bo
