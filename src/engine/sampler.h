#pragma once
// Turns a row of logits into a token id. The filters run in Hugging Face's
// order: temperature, then top-k, top-p, min-p, each on the distribution the
// previous one left:
//   top-k  keeps tokens whose logit is >= the k-th largest (ties at the
//          boundary are all kept, as in HF and vLLM);
//   top-p  keeps the most probable tokens until their mass reaches top_p (the
//          token that crosses it included; the top token always survives);
//   min-p  keeps tokens with probability >= min_p x the top probability.
// temperature 0 is greedy: argmax, the lowest id on ties.
//
// Randomness comes from one std::mt19937_64 stream per Sampler, seeded from
// params.seed (std::random_device when absent), turned into doubles by our own
// code rather than std::uniform_real_distribution, so a seed gives the same
// tokens with any standard library.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/sampling_params.h"

namespace flashdraft::engine {

class Sampler {
 public:
  // Validates params (see validate()).
  explicit Sampler(const SamplingParams& params);

  // Throws flashdraft::Error if logits is empty or holds a NaN or +inf.
  int32_t sample(std::span<const float> logits);

  // The distribution sample() draws from, over the whole vocabulary (zeros
  // for filtered tokens; one-hot at the argmax when greedy). Speculative
  // decoding's lossless acceptance test needs exactly this.
  std::vector<float> probs(std::span<const float> logits) const;

  // Draws an index with probability proportional to weights (which need not
  // sum to 1, e.g. probs() with a rejected draft zeroed out). Throws when no
  // weight is positive.
  int32_t sample_from_probs(std::span<const float> weights);

  // A uniform double in [0, 1) from the same stream (acceptance tests).
  double uniform();

  const SamplingParams& params() const { return params_; }

 private:
  // The filtered distribution in sparse form: surviving ids (ascending) and
  // their probabilities.
  struct Distribution {
    std::vector<int32_t> ids;
    std::vector<float> probs;
    std::vector<double> work;  // unnormalised / intermediate probabilities
  };
  // Fills `d`, reusing its buffers: sample() keeps one across calls, because
  // freshly allocated vocabulary-sized buffers cost more in page faults than
  // the softmax itself.
  void distribution(std::span<const float> logits, Distribution& d) const;
  // Walks the cumulative sum of positive weights with one uniform draw.
  int32_t draw(const std::vector<int32_t>& ids, const std::vector<float>& weights);

  SamplingParams params_;
  std::mt19937_64 rng_;
  Distribution scratch_;
};

// Index of the largest value, the lowest index on ties.
int32_t argmax(std::span<const float> values);

}  // namespace flashdraft::engine
