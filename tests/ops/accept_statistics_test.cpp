// Speculative sampling through Backend::accept is lossless: the first tokens
// a DFlash loop emits (sample the anchor, draft k argmax tokens, verify with
// accept, emit the accepted drafts and the bonus, repeat) follow exactly the
// distribution of plain sampling from the target. With one uniform per
// position, they are even the very tokens plain sampling draws with the same
// seed, which the test checks too.
//
// A toy target and drafter over a 4-token vocabulary stand in for models:
// both are fixed functions of the whole prefix, so the exact probability of
// every 3-token continuation is the product of the target's filtered
// conditionals (cpu::sample_weights). The drafter agrees with the target's
// top token only part of the time, so acceptances, rejections and
// zero-probability drafts all happen.
//
// False-alarm rate: chi-square goodness of fit at alpha = 1e-4 (the
// critical value from the Wilson-Hilferty approximation, as in
// sample_statistics_test), so a correct implementation fails for about 1
// seed base in 10,000. Seeds are fixed, so the test is deterministic; they
// were not chosen to pass. Power: the same test rejects a subtly wrong rule
// (after a rejection, resampling from p without removing the rejected draft).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "ops/backend.h"
#include "ops/cpu/sampling.h"
#include "ops/ops.h"
#include "ops/sample_math.h"
#include "test_support/chi_square.h"

namespace flashdraft::ops {
namespace {

using ::flashdraft::testing::chi_square_critical;
using ::flashdraft::testing::kZAlpha1e4;

constexpr int kVocab = 4;
constexpr int kEmit = 3;    // tokens whose joint distribution is tested
constexpr int kDrafts = 3;  // speculative tokens per step
constexpr int kRuns = 200000;

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

uint64_t hash_prefix(const std::vector<int32_t>& prefix, uint64_t salt) {
  uint64_t h = salt;
  for (int32_t t : prefix) h = mix(h ^ static_cast<uint64_t>(t + 1) * 0x9e3779b97f4a7c15ULL);
  return h;
}

// Target logits after `prefix`: pseudo-random values in [-2, 2).
std::vector<float> target_logits(const std::vector<int32_t>& prefix) {
  std::vector<float> out(kVocab);
  uint64_t h = hash_prefix(prefix, 17);
  for (int v = 0; v < kVocab; ++v) {
    h = mix(h + static_cast<uint64_t>(v));
    out[static_cast<size_t>(v)] = static_cast<float>((h >> 11) * 0x1.0p-53 * 4.0 - 2.0);
  }
  return out;
}

// The drafter's argmax pick: the target's top token about half the time.
int32_t draft_token(const std::vector<int32_t>& prefix) {
  const uint64_t h = hash_prefix(prefix, 4242);
  if (h % 2 == 0) return static_cast<int32_t>(cpu::argmax(target_logits(prefix).data(), kVocab));
  return static_cast<int32_t>((h >> 8) % kVocab);
}

SampleRow target_params(uint64_t seed) {
  SampleRow p;
  p.temperature = 0.9f;
  p.top_k = 3;  // one token per row is impossible: drafts of probability 0 occur
  p.seed_lo = static_cast<uint32_t>(seed);
  p.seed_hi = static_cast<uint32_t>(seed >> 32);
  return p;
}

std::vector<float> weights(const std::vector<float>& logits, const SampleRow& p) {
  std::vector<float> w(kVocab);
  cpu::sample_weights(logits.data(), kVocab, p, w.data());
  return w;
}

// rows: [anchor, d1..dk] logits; row i carries position pos0 + i and draft d_{i+1}.
// Returns {accepted, bonus}.
using AcceptRule = std::function<std::pair<int32_t, int32_t>(std::vector<float>&, std::vector<SampleRow>&)>;

std::pair<int32_t, int32_t> backend_accept(std::vector<float>& logits, std::vector<SampleRow>& rows) {
  static const std::unique_ptr<Backend> cpu = make_cpu_backend();
  const auto n = static_cast<int64_t>(rows.size());
  std::vector<int32_t> seq_start = {0, static_cast<int32_t>(n)}, tokens(rows.size()), out(2);
  auto view = [](void* data, DType dt, int64_t r, int64_t c) { return Tensor{data, dt, Device::CPU, r, c, c}; };
  cpu->accept(view(logits.data(), DType::F32, n, kVocab), view(rows.data(), DType::I32, n, SampleRow::kWords),
              view(seq_start.data(), DType::I32, 2, 1), view(tokens.data(), DType::I32, n, 1),
              view(out.data(), DType::I32, 1, 2));
  return {out[0], out[1]};
}

// Wrong on purpose: accept with probability p(d) (draw 1 of the position),
// and after a rejection sample from p with the rejected draft still in it
// (draw 0), which over-weights drafted tokens.
std::pair<int32_t, int32_t> accept_without_removal(std::vector<float>& logits, std::vector<SampleRow>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<float> row(logits.begin() + static_cast<long>(i * kVocab),
                                 logits.begin() + static_cast<long>((i + 1) * kVocab));
    const std::vector<float> w = weights(row, rows[i]);
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    const uint64_t seed = uint64_t{rows[i].seed_hi} << 32 | rows[i].seed_lo;
    const auto pos = static_cast<uint32_t>(rows[i].position);
    const bool last = i + 1 == rows.size();
    if (!last && sample_math::uniform(seed, pos, 1) < w[static_cast<size_t>(rows[i].draft)] / total) continue;
    return {static_cast<int32_t>(i), cpu::draw(w.data(), kVocab, sample_math::uniform(seed, pos, 0))};
  }
  return {0, -1};
}

struct LoopCounts {
  std::vector<int> outcomes = std::vector<int>(static_cast<size_t>(std::pow(kVocab, kEmit)), 0);
  int64_t accepted = 0, rejected = 0;
  int64_t differ_from_plain = 0;
};

int index_of(const std::vector<int32_t>& tokens) {
  int index = 0;
  for (int i = 0; i < kEmit; ++i) index = index * kVocab + tokens[static_cast<size_t>(i)];
  return index;
}

// kEmit tokens after `prompt` by plain sampling, one position at a time.
std::vector<int32_t> plain_loop(const std::vector<int32_t>& prompt, uint64_t seed) {
  std::vector<int32_t> seq = prompt;
  std::vector<float> scratch(kVocab);
  while (seq.size() < prompt.size() + kEmit) {
    SampleRow p = target_params(seed);
    p.position = static_cast<int32_t>(seq.size());
    seq.push_back(cpu::sample_row(target_logits(seq).data(), kVocab, p, scratch.data()));
  }
  return std::vector<int32_t>(seq.begin() + static_cast<long>(prompt.size()), seq.end());
}

// One DFlash generation of kEmit tokens after `prompt`.
std::vector<int32_t> spec_loop(const std::vector<int32_t>& prompt, uint64_t seed, const AcceptRule& rule,
                               LoopCounts& counts) {
  std::vector<int32_t> seq = prompt, out;
  std::vector<float> scratch(kVocab);
  SampleRow first = target_params(seed);
  first.position = static_cast<int32_t>(seq.size());
  int32_t anchor = cpu::sample_row(target_logits(seq).data(), kVocab, first, scratch.data());
  while (true) {
    out.push_back(anchor);
    if (static_cast<int>(out.size()) >= kEmit) break;
    seq.push_back(anchor);
    std::vector<int32_t> drafts, ctx = seq;
    for (int j = 0; j < kDrafts; ++j) {
      drafts.push_back(draft_token(ctx));
      ctx.push_back(drafts.back());
    }
    std::vector<float> logits;
    std::vector<SampleRow> rows;
    ctx = seq;
    for (int i = 0; i <= kDrafts; ++i) {
      const auto row = target_logits(ctx);
      logits.insert(logits.end(), row.begin(), row.end());
      SampleRow p = target_params(seed);
      p.position = static_cast<int32_t>(ctx.size());
      p.draft = i < kDrafts ? drafts[static_cast<size_t>(i)] : -1;
      rows.push_back(p);
      if (i < kDrafts) ctx.push_back(drafts[static_cast<size_t>(i)]);
    }
    const auto [a, bonus] = rule(logits, rows);
    counts.accepted += a;
    counts.rejected += a < kDrafts;
    for (int i = 0; i < a && static_cast<int>(out.size()) < kEmit; ++i) {
      out.push_back(drafts[static_cast<size_t>(i)]);
      seq.push_back(drafts[static_cast<size_t>(i)]);
    }
    if (static_cast<int>(out.size()) >= kEmit) break;
    anchor = bonus;
  }
  return out;
}

// Exact probability of each kEmit-token continuation under plain sampling.
std::vector<double> exact_distribution(const std::vector<int32_t>& prompt) {
  std::vector<double> p(static_cast<size_t>(std::pow(kVocab, kEmit)), 0.0);
  for (size_t index = 0; index < p.size(); ++index) {
    std::vector<int32_t> seq = prompt;
    double prob = 1.0;
    size_t rest = index;
    std::vector<int32_t> tokens(kEmit);
    for (int i = kEmit - 1; i >= 0; --i) {
      tokens[static_cast<size_t>(i)] = static_cast<int32_t>(rest % kVocab);
      rest /= kVocab;
    }
    for (int32_t t : tokens) {
      const std::vector<float> w = weights(target_logits(seq), target_params(1));
      prob *= w[static_cast<size_t>(t)] / std::accumulate(w.begin(), w.end(), 0.0);
      seq.push_back(t);
    }
    p[index] = prob;
  }
  return p;
}

double chi_square(const LoopCounts& c, const std::vector<double>& expected, int* support) {
  double chi2 = 0;
  *support = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] <= 0) {
      if (c.outcomes[i] > 0) return INFINITY;  // an impossible continuation was emitted
      continue;
    }
    ++*support;
    const double e = expected[i] * kRuns;
    chi2 += (c.outcomes[i] - e) * (c.outcomes[i] - e) / e;
  }
  return chi2;
}

LoopCounts simulate(const std::vector<int32_t>& prompt, const AcceptRule& rule, uint64_t seed_base) {
  LoopCounts counts;
  for (int r = 0; r < kRuns; ++r) {
    const uint64_t seed = seed_base + static_cast<uint64_t>(r);
    const std::vector<int32_t> out = spec_loop(prompt, seed, rule, counts);
    ++counts.outcomes[static_cast<size_t>(index_of(out))];
    counts.differ_from_plain += out != plain_loop(prompt, seed);
  }
  return counts;
}

TEST(AcceptStatistics, SpeculativeSamplingMatchesPlainSampling) {
  const std::vector<int32_t> prompt = {2, 0, 3};
  const std::vector<double> expected = exact_distribution(prompt);

  LoopCounts spec = simulate(prompt, backend_accept, 1'000'000);
  int support = 0;
  const double chi2 = chi_square(spec, expected, &support);
  ASSERT_GE(support, 8);
  const double critical = chi_square_critical(support - 1, kZAlpha1e4);
  EXPECT_LT(chi2, critical) << "df " << support - 1;
  // Both branches of the rule were exercised.
  EXPECT_GT(spec.accepted, kRuns / 10);
  EXPECT_GT(spec.rejected, kRuns / 10);
  // One uniform per position: the same tokens as plain sampling, run by run.
  EXPECT_EQ(spec.differ_from_plain, 0);

  // Power: the test notices a rule that forgets to remove the rejected draft.
  LoopCounts wrong = simulate(prompt, accept_without_removal, 1'000'000);
  int wrong_support = 0;
  const double chi2_wrong = chi_square(wrong, expected, &wrong_support);
  EXPECT_GT(chi2_wrong, critical);
  EXPECT_GT(wrong.differ_from_plain, 0);
  std::printf("chi-square %.1f (correct rule), %.1f (wrong rule), critical %.1f at df %d\n", chi2, chi2_wrong, critical,
              support - 1);
}

}  // namespace
}  // namespace flashdraft::ops
