// The pieces of adaptive speculation without a model: the step cost model's
// fit, the acceptance estimate, and the draft length policy's choices under
// cost models given outright (no clock).
#include <algorithm>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <set>

#include "engine/acceptance_estimate.h"
#include "engine/draft_length_policy.h"
#include "engine/step_cost_model.h"

namespace flashdraft::engine {
namespace {

using Coefficients = StepCostModel::Coefficients;
enum Term {
  kStep, kRow, kRow16, kRow64, kRow256, kLogit, kSeq, kSeqKeys, kRowKeys, kDraft, kDraftRow, kDraftKeys, kUneven,
  kDraftLogit
};

Coefficients coefficients(std::initializer_list<std::pair<Term, double>> terms) {
  Coefficients c{};
  for (auto [t, v] : terms) c[t] = v;
  return c;
}

StepShape decode_batch(int64_t n, int64_t rows, int64_t context) {
  StepShape s;
  for (int64_t i = 0; i < n; ++i) s.add_decode(context, rows);
  return s;
}

// A CPU-like machine: a step costs ~4 ms however small, every row ~0.5 ms more.
const Coefficients kCpuLike = coefficients({{kStep, 4e-3}, {kRow, 0.35e-3}, {kLogit, 0.1e-3}, {kRowKeys, 0.2e-3},
                                            {kDraft, 0.8e-3}, {kDraftRow, 0.15e-3}, {kDraftKeys, 0.1e-3}});
// A GPU-like one: flat up to 64 rows, then compute-bound.
const Coefficients kGpuLike =
    coefficients({{kStep, 5e-3}, {kRow, 0.002e-3}, {kRow64, 0.08e-3}, {kSeqKeys, 0.01e-3}, {kDraft, 0.9e-3}, {kDraftRow, 0.01e-3}});

TEST(StepShape, CountsRowsKeysAndDrafts) {
  StepShape s;
  s.add_decode(100, 4);  // anchor + 3 drafts
  s.add_decode(50, 1);   // plain
  s.add_prefill(0, 8);
  EXPECT_EQ(s.seqs, 3);
  EXPECT_EQ(s.rows, 13);
  EXPECT_EQ(s.logit_rows, 4 + 1 + 1);
  EXPECT_EQ(s.seq_keys, 104 + 51 + 8);
  EXPECT_EQ(s.row_keys, (101 + 102 + 103 + 104) + 51 + (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8));
  EXPECT_EQ(s.draft_seqs, 1);
  EXPECT_EQ(s.draft_rows, 4);
  EXPECT_EQ(s.draft_keys, 4 * 104);
  EXPECT_EQ(s.draft_logit_rows, 3);

  // The runner drafts a whole block (16 rows) for 2 drafts: the drafter's
  // rows and keys are the block's, its logit rows the drafts'.
  StepShape b;
  b.add_decode(100, 3, 16);
  EXPECT_EQ(b.rows, 3);
  EXPECT_EQ(b.draft_rows, 16);
  EXPECT_EQ(b.draft_keys, 16 * 116);
  EXPECT_EQ(b.draft_logit_rows, 2);
  b.add_decode(100, 1, 16);  // no drafts, no drafter rows
  EXPECT_EQ(b.draft_seqs, 1);
  EXPECT_EQ(b.draft_rows, 16);
}

TEST(Nnls, MatchesLeastSquaresWhenThatIsNonNegativeAndClampsOtherwise) {
  // Rows of A and b: y = 2 x0 + 1 x1 exactly.
  const std::vector<std::array<double, 2>> a = {{1, 0}, {1, 1}, {1, 2}, {1, 3}};
  auto normal = [&](const std::vector<double>& b) {
    std::vector<double> ata(4, 0), atb(2, 0);
    for (size_t r = 0; r < a.size(); ++r)
      for (int i = 0; i < 2; ++i) {
        atb[i] += a[r][i] * b[r];
        for (int j = 0; j < 2; ++j) ata[i * 2 + j] += a[r][i] * a[r][j];
      }
    return nnls_normal(ata, atb, 2);
  };
  auto x = normal({2, 3, 4, 5});
  EXPECT_NEAR(x[0], 2, 1e-4);  // the ridge's bias is ~1e-6
  EXPECT_NEAR(x[1], 1, 1e-4);
  // Decreasing data: least squares wants a negative slope; NNLS pins it at 0
  // and fits the mean with the intercept.
  x = normal({5, 4, 3, 2});
  EXPECT_EQ(x[1], 0);
  EXPECT_NEAR(x[0], 3.5, 1e-4);
}

TEST(Nnls, AWarmStartFindsTheSameMinimiserFromAnyTermsInUse) {
  // 6 terms, random rows; the truth uses terms 0, 2 and 5, and the data are
  // noisy so that least squares alone would give some others negative weight.
  constexpr int n = 6;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> ata(n * n, 0), atb(n, 0);
  for (int r = 0; r < 200; ++r) {
    std::array<double, n> x{};
    for (double& v : x) v = u(rng);
    const double y = 2 * x[0] + 0.5 * x[2] + 3 * x[5] + 0.3 * (u(rng) - 0.5);
    for (int i = 0; i < n; ++i) {
      atb[i] += x[i] * y;
      for (int j = 0; j < n; ++j) ata[i * n + j] += x[i] * x[j];
    }
  }
  const std::vector<double> cold = nnls_normal(ata, atb, n);
  int zeros = 0;
  for (double v : cold) zeros += v == 0;
  EXPECT_GT(zeros, 0);  // the constraint binds somewhere
  const std::vector<std::vector<double>> starts = {
      cold, std::vector<double>(n, 1.0), {0, 1, 0, 1, 1, 0}, {5, 0, 0, 0, 0, 0}, std::vector<double>(n, 0.0)};
  for (const auto& start : starts) {
    const std::vector<double> warm = nnls_normal(ata, atb, n, start);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(warm[i], cold[i], 1e-9 * (1 + std::abs(cold[i]))) << i;
  }
}

TEST(StepCostModel, FitsAMachineFromVariedStepsAndFollowsItWhenItSlowsDown) {
  const StepCostModel truth(kCpuLike);
  StepCostModel fit;
  std::mt19937 rng(5);
  auto random_shape = [&] {
    StepShape s;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      const int64_t ctx = 16 + static_cast<int64_t>(rng() % 1500);
      if (rng() % 6 == 0) {
        s.add_prefill(0, 1 + static_cast<int64_t>(rng() % 128));
      } else {
        s.add_decode(ctx, 1 + static_cast<int64_t>(rng() % 16));
      }
    }
    return s;
  };
  for (int i = 0; i < 300; ++i) {
    const StepShape s = random_shape();
    fit.observe(s, truth.predict(s));
  }
  for (int i = 0; i < 50; ++i) {
    const StepShape s = random_shape();
    EXPECT_NEAR(fit.predict(s), truth.predict(s), 0.02 * truth.predict(s)) << fit.describe();
  }
  // The machine becomes twice as slow: within a few hundred steps the model agrees.
  const StepCostModel slower([] {
    Coefficients c = kCpuLike;
    for (double& v : c) v *= 2;
    return c;
  }());
  for (int i = 0; i < 600; ++i) {
    const StepShape s = random_shape();
    fit.observe(s, slower.predict(s));
  }
  const StepShape probe = decode_batch(4, 8, 500);
  EXPECT_NEAR(fit.predict(probe), slower.predict(probe), 0.1 * slower.predict(probe));
}

TEST(StepShape, ManyDecodesAtOnceEqualEachAddedOnItsOwn) {
  const int64_t contexts[] = {0, 37, 1900, 4096}, blocks[] = {16, 16, 8, 16};
  for (int64_t rows : {1, 2, 8}) {
    StepShape one_by_one, at_once;
    double context_sum = 0, block_sum = 0, block_keys_sum = 0;
    for (int i = 0; i < 4; ++i) {
      one_by_one.add_decode(contexts[i], rows, blocks[i]);
      context_sum += static_cast<double>(contexts[i]);
      block_sum += static_cast<double>(blocks[i]);
      block_keys_sum += static_cast<double>(blocks[i] * (contexts[i] + blocks[i]));
    }
    at_once.add_decodes(4, rows, context_sum, block_sum, block_keys_sum);
    EXPECT_EQ(StepCostModel::features(at_once), StepCostModel::features(one_by_one)) << rows << " rows";
    EXPECT_EQ(at_once.draft_seqs, one_by_one.draft_seqs) << rows << " rows";
  }
}

TEST(StepCostModel, ARefitLeftDueWaitsForRefitIfDue) {
  // The engine observes a step without refitting and refits while the
  // backend runs the next one: until then the fit is the one before.
  StepCostModel now, later;
  for (int i = 0; i < 4; ++i) {
    const StepShape s = decode_batch(1 + i, 1 + 3 * i, 200 * (i + 1));
    const double t = StepCostModel(kCpuLike).predict(s);
    now.observe(s, t);
    later.observe(s, t, 1.0, /*refit_now=*/false);
  }
  const StepShape probe = decode_batch(2, 4, 300);
  EXPECT_GT(now.predict(probe), 0);
  EXPECT_EQ(later.predict(probe), 0);  // no fit yet
  later.refit_if_due();
  EXPECT_NEAR(later.predict(probe), now.predict(probe), 1e-9 * now.predict(probe));  // one minimiser
  const auto fitted = later.coefficients();
  later.refit_if_due();  // nothing due: the same fit
  EXPECT_EQ(later.coefficients(), fitted);
}

TEST(StepCostModel, GivenCoefficientsStayFixed) {
  StepCostModel fixed(kCpuLike, /*learn=*/false);
  const StepShape s = decode_batch(2, 4, 100);
  const double before = fixed.predict(s);
  fixed.observe(s, 10 * before);
  EXPECT_EQ(fixed.predict(s), before);
}

TEST(AcceptanceEstimate, StartsFromThePriorAndFollowsTheRequest) {
  AcceptanceEstimate est(15);
  std::vector<double> p(15);
  est.cumulative(7, p);
  EXPECT_NEAR(p[0], AcceptanceEstimate::kPrior, 1e-12);
  EXPECT_NEAR(p[2], std::pow(AcceptanceEstimate::kPrior, 3), 1e-12);
  for (int i = 0; i < 6; ++i) est.observe(7, 15, 0);  // always rejected at once
  est.cumulative(7, p);
  EXPECT_LT(p[0], 0.35);
  // Only position 1 was ever tried: later positions keep the global rate,
  // which for a position nobody reached is that of the position before it.
  EXPECT_NEAR(est.request_rate(7, 2), est.global_rate(2), 1e-12);
  EXPECT_LT(est.global_rate(1), 0.35);
  EXPECT_NEAR(est.global_rate(15), est.global_rate(1), 1e-12);
  // Another request, all accepted: it starts from the (now lower) global rate
  // and climbs to near 1.
  est.cumulative(8, p);
  EXPECT_LT(p[0], AcceptanceEstimate::kPrior);
  for (int i = 0; i < 10; ++i) est.observe(8, 15, 15);
  est.cumulative(8, p);
  for (int m = 1; m <= 15; ++m) {
    EXPECT_GT(est.request_rate(8, m), 0.8) << m;
    EXPECT_GT(est.request_rate(8, m), est.global_rate(m)) << m;
  }
  // Idle steps let request 7 drift back towards the global rate, and after
  // kProbeAfter of them it is due a probe: optimistic until it drafts again.
  const double low = est.request_rate(7, 1);
  for (int i = 0; i < AcceptanceEstimate::kProbeAfter - 1; ++i) est.idle(7);
  const double drifted = est.request_rate(7, 1);
  EXPECT_GT(drifted, low + 0.1);
  EXPECT_LT(drifted, AcceptanceEstimate::kPrior);
  est.idle(7);
  EXPECT_EQ(est.request_rate(7, 1), AcceptanceEstimate::kPrior);
  est.observe(7, 2, 0);
  EXPECT_LT(est.request_rate(7, 1), drifted);
  // That probe failed: the next one waits twice as long.
  for (int i = 0; i < 2 * AcceptanceEstimate::kProbeAfter - 1; ++i) est.idle(7);
  EXPECT_LT(est.request_rate(7, 1), AcceptanceEstimate::kPrior);
  est.idle(7);
  EXPECT_EQ(est.request_rate(7, 1), AcceptanceEstimate::kPrior);
  est.forget(7);
  EXPECT_EQ(est.request_rate(7, 1), est.global_rate(1));
}

// A probe is as optimistic as the global evidence allows: after two failed
// first drafts it assumes kPrior, as at the start; after many, hardly more
// than what they showed.
TEST(AcceptanceEstimate, AProbeIsOptimisticOnlyWhereLittleIsKnown) {
  AcceptanceEstimate est(15);
  for (RequestId id = 0; id < 2; ++id) est.observe(id, 15, 0);
  EXPECT_EQ(est.probe_rate(1), AcceptanceEstimate::kPrior);
  for (int i = 0; i < AcceptanceEstimate::kProbeAfter; ++i) est.idle(0);
  EXPECT_EQ(est.request_rate(0, 1), AcceptanceEstimate::kPrior);

  for (RequestId id = 2; id < 60; ++id) est.observe(id, 15, 0);
  EXPECT_LT(est.probe_rate(1), 0.15);
  EXPECT_GT(est.probe_rate(1), est.global_rate(1));
  for (int i = 0; i < AcceptanceEstimate::kProbeAfter; ++i) est.idle(3);
  EXPECT_EQ(est.request_rate(3, 1), est.probe_rate(1));  // due, but its probe expects little
  EXPECT_LT(est.request_rate(3, 1), 0.15);
}

DraftCandidate candidate(int64_t context, int64_t max_drafts, double rate) {
  DraftCandidate c;
  c.context = context;
  c.max_drafts = max_drafts;
  double p = 1;
  for (int64_t j = 0; j < max_drafts; ++j) c.accept.push_back(p *= rate);
  return c;
}

// The shared length of `lengths` with the most expected tokens per second, by brute force.
int64_t best_shared_length(const std::vector<DraftCandidate>& c, const StepCostModel& costs,
                           const std::vector<int64_t>& lengths) {
  double best = 0;
  int64_t best_u = -1;
  for (int64_t u : lengths) {
    StepShape s;
    double tokens = 0;
    for (const auto& x : c) {
      s.add_decode(x.context, 1 + u);
      tokens += expected_tokens(x, u);
    }
    if (tokens / costs.predict(s) > best) best = tokens / costs.predict(s), best_u = u;
  }
  return best_u;
}

std::vector<int64_t> all_lengths(int64_t k) {
  std::vector<int64_t> all;
  for (int64_t u = 0; u <= k; ++u) all.push_back(u);
  return all;
}

// The acceptance a real history gives, through AcceptanceEstimate.
DraftCandidate from_history(int64_t context, int64_t k, int64_t accepted_each_step) {
  AcceptanceEstimate est(k);
  for (int i = 0; i < 20; ++i) est.observe(1, k, accepted_each_step);
  DraftCandidate c;
  c.context = context;
  c.max_drafts = k;
  c.accept.resize(static_cast<size_t>(k));
  est.cumulative(1, c.accept);
  return c;
}

TEST(DraftLengthPolicy, DraftsNothingWhenDraftsAreAlwaysRejected) {
  for (const auto& coef : {kCpuLike, kGpuLike}) {
    const StepCostModel costs(coef);
    for (int n : {1, 8, 64}) {
      std::vector<DraftCandidate> c(static_cast<size_t>(n), from_history(300, 15, 0));
      for (int64_t k : choose_draft_lengths(c, costs)) EXPECT_EQ(k, 0) << n << " requests";
    }
  }
}

TEST(DraftLengthPolicy, DraftsTheWholeBlockWhenEveryDraftIsAccepted) {
  // On the GPU-like machine a batch of up to 4 x 16 rows costs the same as
  // one row: a draft that always passes is free tokens.
  const StepCostModel costs(kGpuLike);
  for (int n : {1, 2, 4}) {
    std::vector<DraftCandidate> c(static_cast<size_t>(n), from_history(300, 15, 15));
    for (int64_t k : choose_draft_lengths(c, costs)) EXPECT_EQ(k, 15) << n << " requests";
  }
  // On the CPU-like one too, for one request: 16 tokens for 4 + 16 x 0.6 ms.
  std::vector<DraftCandidate> one(1, from_history(300, 15, 15));
  EXPECT_EQ(choose_draft_lengths(one, StepCostModel(kCpuLike))[0], 15);
}

TEST(DraftLengthPolicy, OnlyTheRequestsWhoseDraftsPassDraftWhenRowsCost) {
  // CPU-like, 8 requests: two in a loop (everything accepted), six whose
  // drafts fail. Drafting for the six would cost rows for nothing.
  const StepCostModel costs(kCpuLike);
  std::vector<DraftCandidate> c;
  for (int i = 0; i < 8; ++i) c.push_back(i == 2 || i == 5 ? candidate(200, 15, 0.999) : candidate(200, 15, 0.05));
  const auto k = choose_draft_lengths(c, costs);
  for (int i = 0; i < 8; ++i) {
    if (i == 2 || i == 5) {
      EXPECT_EQ(k[i], 15) << i;
    } else {
      EXPECT_EQ(k[i], 0) << i;
    }
  }
}

TEST(DraftLengthPolicy, ShorterDraftsAtLongerContextAndFixedRequestsKeepTheirLength) {
  const StepCostModel costs(kCpuLike);
  std::vector<DraftCandidate> short_ctx{candidate(100, 15, 0.8)}, long_ctx{candidate(4000, 15, 0.8)};
  const int64_t k_short = choose_draft_lengths(short_ctx, costs)[0];
  const int64_t k_long = choose_draft_lengths(long_ctx, costs)[0];
  EXPECT_GT(k_short, 0);
  EXPECT_LT(k_short, 15);
  EXPECT_LT(k_long, k_short);

  std::vector<DraftCandidate> mixed{candidate(100, 15, 0.05), candidate(100, 15, 0.05)};
  mixed[1].fixed = true;
  const auto k = choose_draft_lengths(mixed, costs);
  EXPECT_EQ(k[0], 0);
  EXPECT_EQ(k[1], 15);
}

TEST(DraftLengthPolicy, OneLengthPerStepWhereGraphsReplay) {
  // The mixed batch above, with one length for all: the best shared length,
  // which a request near its end (3 drafts of use) verifies too.
  const StepCostModel costs(kCpuLike);
  std::vector<DraftCandidate> c;
  for (int i = 0; i < 8; ++i) c.push_back(i == 2 || i == 5 ? candidate(200, 15, 0.999) : candidate(200, 15, 0.05));
  c.push_back(candidate(200, 3, 0.999));
  const auto k = choose_draft_lengths(c, costs, DraftOptions{.one_length = true, .lengths = {}});
  for (int64_t x : k) EXPECT_EQ(x, k[0]);
  EXPECT_EQ(k[0], best_shared_length(c, costs, all_lengths(15)));
}

TEST(DraftLengthPolicy, OneLengthSumsTheStepAsEachRequestWouldAddIt) {
  // The shared-length search sums the requests' share of each step in closed
  // form; a brute force adding each request's rows (StepShape::add_decode,
  // draft blocks included) must pick the same length, over random batches
  // with short and long contexts (the attention terms weigh) and, in some, a request
  // whose draft block is shorter than the longest drafts. Each batch has its
  // own cost model, every term scaled by 0.01 .. 10 at random, so that each
  // term decides some of the choices.
  const Coefficients base = coefficients({{kStep, 0.3e-3}, {kRow, 0.002e-3}, {kRow16, 0.005e-3}, {kRow64, 0.02e-3},
                                          {kLogit, 0.001e-3}, {kSeq, 0.002e-3}, {kSeqKeys, 0.004e-3},
                                          {kRowKeys, 0.02e-3}, {kDraft, 0.06e-3}, {kDraftRow, 0.001e-3},
                                          {kDraftKeys, 0.0002e-3}, {kDraftLogit, 0.002e-3}});
  std::mt19937 rng(11);
  std::set<int64_t> picked;
  for (int trial = 0; trial < 1000; ++trial) {
    Coefficients scaled = base;
    for (double& v : scaled) v *= std::pow(10.0, -2.0 + 3.0 * static_cast<double>(rng() % 1000) / 1000.0);
    const StepCostModel costs(scaled);
    std::vector<DraftCandidate> c;
    const int n = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) {
      const double rate = 0.05 + 0.9 * static_cast<double>(rng() % 1000) / 1000.0;
      c.push_back(candidate(static_cast<int64_t>(rng() % (trial % 2 ? 6000 : 40)), 15, rate));
      c.back().draft_block = trial % 5 == 0 && i == 0 ? 4 : 16;
    }
    double best = 0;
    int64_t want = -1;
    for (int64_t u = 0; u <= 15; ++u) {
      StepShape s;
      double tokens = 0;
      for (const auto& x : c) {
        s.add_decode(x.context, 1 + u, x.draft_block);
        tokens += expected_tokens(x, u);
      }
      if (tokens / costs.predict(s) > best) best = tokens / costs.predict(s), want = u;
    }
    const auto k = choose_draft_lengths(c, costs, DraftOptions{.one_length = true, .lengths = {}});
    for (int64_t x : k) ASSERT_EQ(x, want) << "trial " << trial;
    picked.insert(want);
  }
  EXPECT_GE(picked.size(), 3u);  // the batches were not all one answer
}

TEST(DraftLengthPolicy, OnlyRecordedLengthsWhereGraphsReplay) {
  // Drafts that pass for 5 positions and then fail: 5 would be best, but
  // only 0 1 3 7 15 have recorded graphs, so the best of those.
  const StepCostModel costs(kCpuLike);
  std::vector<DraftCandidate> c{candidate(200, 15, 0.999), candidate(200, 15, 0.999)};
  for (auto& x : c)
    for (size_t j = 5; j < x.accept.size(); ++j) x.accept[j] = 1e-3 * x.accept[j];
  ASSERT_EQ(best_shared_length(c, costs, all_lengths(15)), 5);
  const std::vector<int64_t> ladder{0, 1, 3, 7, 15};
  DraftOptions options;
  options.one_length = true;
  options.lengths = ladder;
  const auto k = choose_draft_lengths(c, costs, options);
  for (int64_t x : k) EXPECT_EQ(x, k[0]);
  EXPECT_EQ(k[0], best_shared_length(c, costs, ladder));
}

TEST(DraftLengthPolicy, NeverMoreThanARequestCanUse) {
  const StepCostModel costs(kGpuLike);
  std::vector<DraftCandidate> c{candidate(100, 3, 1.0), candidate(100, 0, 1.0)};
  const auto k = choose_draft_lengths(c, costs);
  EXPECT_EQ(k[0], 3);
  EXPECT_EQ(k[1], 0);
}

}  // namespace
}  // namespace flashdraft::engine
