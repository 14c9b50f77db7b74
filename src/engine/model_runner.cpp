#include "engine/model_runner.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "model/activation_buffers.h"

namespace flashdraft::engine {
namespace {

std::vector<model::KVLayerShape> pool_layers(const model::Qwen3Model& target, const model::DFlashDrafter* drafter) {
  std::vector<model::KVLayerShape> layers = target.kv_layers();
  if (drafter) {
    const auto d = drafter->kv_layers();
    layers.insert(layers.end(), d.begin(), d.end());
  }
  return layers;
}

constexpr int64_t kWords = ops::SampleRow::kWords;
constexpr int64_t kDraftWord = static_cast<int64_t>(offsetof(ops::SampleRow, draft) / sizeof(int32_t));
// The shortest context bucket of a recorded step: below it the unused key
// splits of the attention grid cost more than recording another graph.
constexpr int64_t kMinKeysBucket = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A decode entry verifying drafts (the drafter runs for it this step).
bool verifies_drafts(const ScheduledRequest& e) { return e.kind == ScheduledRequest::Kind::Decode && e.rows > 1; }

}  // namespace

ModelRunner::ModelRunner(model::Qwen3Model& target, model::DFlashDrafter* drafter, int64_t num_blocks,
                         int64_t block_size, const RunnerOptions& options)
    : target_(target),
      drafter_(drafter),
      options_(options),
      vocab_(target.config().vocab_size),
      target_layers_(static_cast<int64_t>(target.kv_layers().size())),
      num_blocks_(num_blocks),
      block_size_(block_size) {
  // Pads of a recorded step live in scratch blocks past the block manager's
  // (a drafting pad writes the drafter's whole block).
  const int64_t pad_reach = std::max<int64_t>(options_.spec_rows, drafter ? drafter->config().block_size : 1);
  const int64_t scratch = ceil_div(pad_reach, block_size);
  pool_ = std::make_unique<model::KVPool>(target.backend(), num_blocks + scratch, block_size,
                                          pool_layers(target, drafter));
  for (int64_t b = 0; b < scratch; ++b) scratch_table_.push_back(static_cast<int32_t>(num_blocks + b));
  // Taps cost a copy per tapped layer and row: only when someone reads them.
  target_.set_tap_layers(drafter ? drafter->config().target_layer_ids : std::vector<int64_t>{});

  ops::Backend& be = target_.backend();
  if (drafter_) {
    const auto taps = static_cast<int64_t>(drafter_->config().target_layer_ids.size());
    tap_width_ = taps * target_.config().hidden_size;
    const auto row_bytes = static_cast<int64_t>(ops::dtype_size(be.activation_dtype())) * tap_width_;
    pending_capacity_ = std::max(options_.max_rows, options_.pending_bytes / std::max<int64_t>(row_bytes, 1));
    const int64_t write_bytes = row_bytes + 4 + drafter_->context_write_row_bytes();
    catch_up_rows_ = std::min(pending_capacity_, std::max(options_.max_rows, options_.catch_up_bytes / write_bytes));
    // All at once: a device allocation in the middle of a run stalls it (and
    // would move the store under recorded steps), and on the CPU, where
    // untouched memory costs nothing, a store grown by doubling touched every
    // page twice, each first touch a page fault (the shipped pair, 164
    // prompts at 8 running: 104k faults against plain decoding's 22k).
    pending_taps_ = be.alloc_tensor(be.activation_dtype(), pending_capacity_, tap_width_);
  }
  if (options_.overlap) {
    // follow()'s buffers, for the largest step (at most 14 fixes a sequence):
    // sized now, since growing one later would count as a buffer move and
    // record every graph again.
    model::grow_tensor(be, fixes_, ops::DType::I32, 16 * options_.max_seqs, ops::InputFix::kWords);
    for (auto& lag : lags_) model::grow_tensor(be, lag, ops::DType::I32, options_.max_seqs, 1);
  }
  if (!target_.peers().empty()) start_ranks();
  graphs_on_ = !options_.enforce_eager && be.supports_graphs() && !target_.shard().active();
  if (!graphs_on_) return;
  for (int64_t b : {1, 2, 4})
    if (b < options_.max_seqs) buckets_.push_back(b);
  for (int64_t b = 8; b < options_.max_seqs; b += 8) buckets_.push_back(b);
  buckets_.push_back(options_.max_seqs);
  if (drafter_ && options_.spec_rows > 1) {
    for (int64_t rows = 1; rows < options_.spec_rows; rows *= 2) graph_lengths_.push_back(rows - 1);
    graph_lengths_.push_back(options_.spec_rows - 1);
  }
  // Recorded steps name their buffers: size them all now, for the largest
  // step, so that none moves later (a move means recording again).
  const model::BatchLimits limits{options_.max_rows, options_.max_seqs, options_.max_keys, block_size};
  target_.reserve(limits);
  if (drafter_) {
    // The context writes' buffers first, at their own (larger) size, so that
    // reserve() finds them big enough instead of allocating them twice.
    drafter_->reserve_context_writes({catch_up_rows_, options_.max_seqs, options_.max_keys, block_size});
    drafter_->reserve(limits);
  }
  const int64_t rows = options_.max_rows, seqs = options_.max_seqs;
  model::grow_tensor(be, step_, ops::DType::I32, rows * kWords + seqs + 1 + 5 * rows + 1, 1);
  model::grow_tensor(be, sampled_, ops::DType::I32, rows, 1);
  model::grow_tensor(be, verdicts_dev_, ops::DType::I32, seqs, 2);
  if (drafter_) {
    // The writes' scratch: not recorded, but allocating it mid-run would stall a step.
    model::grow_tensor(be, tap_row_ids_, ops::DType::I32, catch_up_rows_, 1);
    model::grow_tensor(be, ctx_taps_, be.activation_dtype(), catch_up_rows_, tap_width_);
  }
}

ModelRunner::~ModelRunner() {
  // A step still in flight lands its downloads here, not in freed memory.
  try {
    if (!flying_.empty()) abandon();
  } catch (...) {  // a backend failing here has failed already; nothing to land
  }
}

int64_t ModelRunner::batch_bucket(int64_t n) const {
  for (int64_t b : buckets_)
    if (b >= n) return b;
  return 0;
}

int64_t ModelRunner::keys_bucket(int64_t keys) const {
  int64_t b = kMinKeysBucket;
  while (b < keys) b *= 2;
  return std::max(keys, std::min(b, options_.max_keys));
}

std::vector<ModelRunner::Seq> ModelRunner::pads(int64_t n, int64_t rows) const {
  Seq pad;
  pad.decode = true;
  pad.rows = rows;
  pad.table = scratch_table_;
  return std::vector<Seq>(static_cast<size_t>(n), pad);
}

GraphCaptureReport ModelRunner::capture_graphs() {
  GraphCaptureReport report;
  report.enabled = graphs_on_;
  if (!graphs_on_) return report;
  const auto t0 = std::chrono::steady_clock::now();
  aside_rows_ = 0;  // the pads set nothing aside
  std::vector<int64_t> row_counts{1};
  for (int64_t k : graph_lengths_)
    if (k > 0) row_counts.push_back(1 + k);
  for (int64_t b : buckets_) {
    for (int64_t r : row_counts) {
      if (b * r > options_.max_rows) continue;
      const std::vector<Seq> seqs = pads(b, r);
      const int64_t keys = keys_bucket(r);
      // Twice: the first run sizes what ops size lazily, the second records.
      for (int pass = 0; pass < 2; ++pass) {
        prepare(seqs, keys);
        const GraphKey key{b, r, drafting_, keys};
        launch(&key);
      }
      ++report.graphs;
    }
    report.batch_sizes.push_back(b);
  }
  target_.backend().synchronize();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

void ModelRunner::run(const StepPlan& plan, const BlockManager& blocks, const std::function<void()>& while_running) {
  if (ranks_ && !dispatching_) {
    PenaltyStep::update_histories(plan);  // the ranks' runners then only read them
    on_every_rank([&](ModelRunner& r) { r.run(plan, blocks); });
    if (while_running) while_running();  // after the ranks' steps: no overlap with tensor parallelism yet
    return;
  }
  launch(plan, blocks);
  if (while_running) while_running();
  finish();
}

bool ModelRunner::follow_ok() const {
  // The step ahead's results must not need what the next step overwrites:
  // its taps (a context write after it: write_context), its logits
  // (log-probabilities, penalties' raw copies), its gathered shards.
  if (flying_.size() != 1 || ranks_ || target_.shard().active()) return false;
  const Step& ahead = flying_.back();
  return !ahead.penalized && (!drafter_ || ahead.context_in_step || ahead.set_aside);
}

void ModelRunner::finish() {
  if (flying_.empty()) return;
  done_ = std::move(flying_.front());
  flying_.pop_front();
  target_.backend().finish_downloads_to(done_.downloads);
  if (target_.shard().active() && !gather_) verdicts_from_tokens(done_.entries);
}

void ModelRunner::abandon() {
  target_.backend().synchronize();
  target_.backend().finish_downloads();
  flying_.clear();
}

void ModelRunner::follow(const StepPlan& ahead, const StepPlan& plan, size_t n_seqs) {
  // Sequence i continues entry j of the step ahead, which was planned as if
  // it kept all its drafts: a decode entry of r rows moves 1 + accepted
  // positions (the host assumed r), a prefill's last chunk exactly its rows.
  std::vector<model::SeqFollow> all(n_seqs), drafting;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const ScheduledRequest& e = plan.entries[i];
    size_t j = 0;
    while (j < ahead.entries.size() && ahead.entries[j].request != e.request) ++j;
    if (j == ahead.entries.size() || e.kind != ScheduledRequest::Kind::Decode)
      throw std::logic_error("model runner: a step launched ahead of its results must continue that step's requests");
    const ScheduledRequest& a = ahead.entries[j];
    const bool decoded = a.kind == ScheduledRequest::Kind::Decode;
    all[i] = {static_cast<int32_t>(j), decoded ? static_cast<int32_t>(1 - a.rows) : 0, true};
  }
  // The step ahead's own lag, if it followed a step too; this one's goes to the other buffer.
  const Step& ahead_step = flying_.back();
  const auto ahead_n = static_cast<int64_t>(ahead.entries.size());
  ops::Backend& be = target_.backend();
  const int lag = ahead_step.lag;
  const ops::Tensor lag_in = lag >= 0 ? lags_[lag].buffer.view(ops::DType::I32, ahead_n, 1) : ops::Tensor{};
  cur_.lag = lag == 0 ? 1 : 0;
  auto* lag_out = model::grow_tensor(be, lags_[cur_.lag], ops::DType::I32, options_.max_seqs, 1).as<int32_t>();
  fix_host_.clear();
  target_.step_inputs().follow(all, fix_host_);
  if (drafting_) {
    for (size_t i = 0; i < n_seqs; ++i)
      if (cur_.draft_count[i] > 0) drafting.push_back(all[i]);
    drafter_->block_inputs().follow(drafting, fix_host_);
  }
  if (cur_.context_in_step) {
    std::vector<model::SeqFollow> rows = all;
    for (auto& f : rows) f.anchor = false;  // the write reads taps, not ids
    drafter_->context_inputs().follow(rows, fix_host_);
  }
  // The sampling rows' positions (the draws' seeds), and the anchor among
  // the host-known ids the target's ids are gathered from.
  auto* words = step_.buffer.view(ops::DType::I32, 1, 1).as<int32_t>();
  constexpr int32_t kPositionWord = static_cast<int32_t>(offsetof(ops::SampleRow, position) / sizeof(int32_t));
  for (size_t i = 0; i < n_seqs; ++i) {
    const model::SeqFollow& f = all[i];
    if (f.verdict < 0) continue;
    ops::InputFix x;
    x.verdict = f.verdict;
    x.shift = f.shift;
    x.dst = words + cur_.logit_begin[i] * kWords + kPositionWord;
    x.count = static_cast<int32_t>(cur_.logit_count[i]);
    x.stride = static_cast<int32_t>(kWords);
    fix_host_.push_back(x);
    x.count = x.stride = 1;
    if (drafting_) {
      x.kind = ops::InputFix::kToken;
      x.dst = words + src_off_ + static_cast<size_t>(n_drafts_ + cur_.row_begin[i]);
      fix_host_.push_back(x);
    }
    x.kind = ops::InputFix::kLag;
    x.dst = lag_out + i;
    fix_host_.push_back(x);
  }
  const auto count = static_cast<int64_t>(fix_host_.size());
  const ops::Tensor fixes = model::grow_tensor(be, fixes_, ops::DType::I32, count, ops::InputFix::kWords);
  be.upload(fixes, fix_host_.data(), ops::DType::I32);
  be.carry_forward(verdicts_dev_.buffer.view(ops::DType::I32, ahead_n, 2), lag_in, fixes);
}

void ModelRunner::launch(const StepPlan& plan, const BlockManager& blocks, const StepPlan* ahead) {
  if (ahead && !follow_ok())
    throw std::logic_error("model runner: a step launched ahead of one that cannot be followed");
  const auto t0 = std::chrono::steady_clock::now();
  // Anchors of a step following another are that step's tokens, put in on the backend (follow).
  struct Following {
    bool& flag;
    Following(bool& f, bool on) : flag(f) { flag = on; }
    ~Following() { flag = false; }
  } following{following_, ahead != nullptr};
  // A step in which nobody drafts sets all its rows aside (write_context):
  // booked below, the taps moved into the store by the step itself
  // (scatter_rows, recorded in its graph), so the host adds no copy to the
  // step (a device copy's call was ~8 us a step at a long-context point on
  // the GPU, where nobody drafts). Every row it computes is committed unless
  // its request stops, and a stopped request's rows are forgotten with it
  // (forget). write_context then has nothing to do.
  cur_.set_aside = drafter_ && std::none_of(plan.entries.begin(), plan.entries.end(), verifies_drafts);
  aside_rows_ = 0;
  // The drafter context of the requests drafting now is complete first.
  if (!pending_.empty() && !cur_.set_aside) {
    std::vector<RequestId> drafting;
    for (const ScheduledRequest& e : plan.entries)
      if (verifies_drafts(e)) drafting.push_back(e.request->id);
    std::sort(drafting.begin(), drafting.end());
    if (!drafting.empty()) flush_context(blocks, &drafting);
  }
  const size_t n = plan.entries.size();
  std::vector<Seq> seqs;
  seqs.reserve(n);
  bool uniform = n > 0;
  int64_t max_keys = 0;
  for (const ScheduledRequest& e : plan.entries) {
    Seq s;
    s.decode = e.kind == ScheduledRequest::Kind::Decode;
    s.decides = s.decode || e.last_chunk;
    s.rows = e.rows;
    s.pos0 = e.pos0;
    s.table = blocks.table(e.request->id);
    s.request = e.request;
    if (s.decode && s.rows > 1 && !drafter_) {
      throw Error("model runner: a decode step of " + std::to_string(e.rows) +
                  " rows needs a drafter (num_speculative_tokens > 0 without a draft model)");
    }
    uniform = uniform && s.decode && s.rows == plan.entries[0].rows;
    max_keys = std::max(max_keys, s.pos0 + s.rows);
    seqs.push_back(s);
  }
  if (seqs.empty()) return;

  if (cur_.set_aside) {
    step_rows_.clear();
    for (const ScheduledRequest& e : plan.entries) step_rows_.push_back(e.rows);
    aside_first_ = book_context(plan, step_rows_, blocks);
    aside_rows_ = pending_used_ - aside_first_;
  }

  // A decode step of one row count runs as a recorded graph when its bucket fits.
  const int64_t r = plan.entries[0].rows;
  const bool penalized = PenaltyStep::needed(plan);
  penalties_.reset();
  gather_ = target_.shard().active() && (penalized || needs_all_logits(plan));
  const int64_t bucket = graphs_on_ && uniform && !penalized ? batch_bucket(static_cast<int64_t>(n)) : 0;
  if (bucket > 0 && bucket * r <= options_.max_rows) {
    const auto extra = pads(bucket - static_cast<int64_t>(n), r);
    seqs.insert(seqs.end(), extra.begin(), extra.end());
    const int64_t keys = keys_bucket(max_keys);
    prepare(seqs, keys);
    if (ahead) follow(*ahead, plan, seqs.size());
    const GraphKey key{bucket, r, drafting_, keys};
    launch(&key);
    download_results(n);
  } else {
    prepare(seqs, 0);
    if (ahead) follow(*ahead, plan, seqs.size());
    if (penalized) {
      if (!target_.shard().active()) PenaltyStep::update_histories(plan);  // else run() did, before the ranks
      penalties_.prepare(target_.backend(), plan, cur_.logit_begin, cur_.logit_count, cur_.draft_begin,
                         cur_.draft_count);
    }
    // An eager step that sets all its rows aside has the forward write the
    // taps where they are booked, instead of copying them there after it
    // (a launch and a copy of every row's taps: ~10 us of a prefill step at
    // a long-context point on the GPU).
    taps_in_store_ = cur_.set_aside && aside_rows_ == n_rows_ && aside_rows_ > 0;
    if (taps_in_store_) target_.set_taps_destination(pending_taps_.t.row_slice(aside_first_, aside_rows_));
    launch(nullptr);
    taps_in_store_ = false;
    download_results(n);
  }
  if (cur_.context_in_step) {
    for (const ScheduledRequest& e : plan.entries) context_writes_.rows += e.rows;
    ++context_writes_.writes;
  }
  cur_.entries = n;
  cur_.penalized = penalized;
  cur_.downloads = target_.backend().mark_downloads();
  cur_.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  flying_.push_back(std::move(cur_));
  cur_ = Step{};
}

void ModelRunner::download_results(size_t n) {
  ops::Backend& be = target_.backend();
  // Copies a step that threw before reading its results left queued land
  // first, into the buffers they were queued for (not resized since); a
  // step still in flight keeps its own.
  if (flying_.empty()) be.finish_downloads();
  // The plan's entries come first; pads after them are never read back.
  cur_.verdicts.resize(2 * n);
  be.download_i32_later(verdicts_dev_.buffer.view(ops::DType::I32, static_cast<int64_t>(n), 2), cur_.verdicts.data());
  int64_t real_drafts = 0;  // up to the last verified draft of a plan entry (pads come after them)
  for (size_t i = 0; i < n; ++i)
    if (cur_.draft_count[i] > 0) real_drafts = cur_.draft_begin[i] + cur_.draft_count[i];
  cur_.drafts.resize(static_cast<size_t>(real_drafts));
  if (real_drafts > 0)
    be.download_i32_later(step_.buffer.view(ops::DType::I32, static_cast<int64_t>(src_off_ + real_drafts), 1)
                              .row_slice(static_cast<int64_t>(src_off_), real_drafts),
                          cur_.drafts.data());
}

void ModelRunner::prepare(std::span<const Seq> seqs, int64_t min_keys) {
  const size_t n = seqs.size();
  n_seqs_ = static_cast<int64_t>(n);
  cur_.logit_begin.assign(n, 0);
  cur_.logit_count.assign(n, 0);
  cur_.draft_begin.assign(n, 0);
  cur_.draft_count.assign(n, 0);
  cur_.row_begin.assign(n, 0);

  // 1. The drafter's blocks: one per decode sequence with room for drafts.
  drafting_ = false;
  n_drafts_ = 0;
  if (drafter_) {
    model::BatchContext blocks_ctx;
    anchors_.clear();
    int64_t row = 0;
    for (size_t i = 0; i < n; ++i) {
      const Seq& s = seqs[i];
      if (!s.decode || s.rows < 2) continue;
      // The drafter runs its whole block whatever the draft length (and
      // whatever num_speculative_tokens: the engine reserves the block): a
      // shorter block is not what it was trained on and proposes worse
      // first tokens (position 1 accepted 0.28 of the time from 3-row blocks
      // against 0.61 from 16-row ones, demo prompt). The verify takes the
      // first rows - 1 drafts; a request's drafts thus never depend on how
      // many it verifies, which keeps its acceptance estimate one quantity.
      // Only the verified rows get logits (the lm_head is most of a short
      // draft's cost on the CPU).
      const int64_t block = drafter_->config().block_size;
      anchors_.push_back(s.request && !following_ ? s.request->anchor() : 0);
      blocks_ctx.seqs.push_back({row, block, s.pos0, s.table, true, s.rows - 1});
      row += block;
      cur_.draft_begin[i] = n_drafts_;
      cur_.draft_count[i] = s.rows - 1;
      n_drafts_ += s.rows - 1;
    }
    if (!anchors_.empty()) {
      drafter_->prepare(anchors_, blocks_ctx, *pool_, target_layers_, min_keys);
      drafting_ = true;
    }
  }

  // 2. The target's rows; a draft's row holds 0 until the drafter's argmax lands there.
  model::BatchContext ctx;
  tokens_.clear();
  int64_t logit_row = 0;
  for (size_t i = 0; i < n; ++i) {
    const Seq& s = seqs[i];
    cur_.row_begin[i] = static_cast<int64_t>(tokens_.size());
    if (s.decode) {
      tokens_.push_back(s.request && !following_ ? s.request->anchor() : 0);
      tokens_.resize(tokens_.size() + static_cast<size_t>(s.rows - 1), 0);
    } else {
      for (int64_t p = s.pos0; p < s.pos0 + s.rows; ++p) tokens_.push_back(s.request->token(p));
    }
    ctx.seqs.push_back({cur_.row_begin[i], s.rows, s.pos0, s.table, s.decode});
    cur_.logit_begin[i] = logit_row;
    cur_.logit_count[i] = s.decode ? s.rows : 1;
    logit_row += cur_.logit_count[i];
  }
  n_rows_ = static_cast<int64_t>(tokens_.size());
  n_logit_rows_ = logit_row;
  target_.prepare_batch(tokens_, ctx, *pool_, min_keys);

  // 3. Sampling rows, sequence starts, and where the drafts go.
  src_off_ = static_cast<size_t>(n_logit_rows_ * kWords + n_seqs_ + 1);
  const size_t minus_one = src_off_ + static_cast<size_t>(n_drafts_ + n_rows_);
  ids_idx_off_ = minus_one + 1;
  draft_idx_off_ = ids_idx_off_ + static_cast<size_t>(n_rows_);
  // Row r's taps go to store row aside_first_ + r; pads' (and every row of a
  // step that sets nothing aside) nowhere. Only a step that can set rows
  // aside (enqueue_step's scatter) carries these indices.
  const int64_t aside_indices = drafter_ && !drafting_ ? n_rows_ : 0;
  aside_idx_off_ = draft_idx_off_ + static_cast<size_t>(n_logit_rows_);
  step_host_.assign(aside_idx_off_ + static_cast<size_t>(aside_indices), 0);
  for (int64_t r = 0; r < aside_indices; ++r)
    step_host_[aside_idx_off_ + static_cast<size_t>(r)] = r < aside_rows_ ? static_cast<int32_t>(aside_first_ + r) : -1;
  std::copy(tokens_.begin(), tokens_.end(), step_host_.begin() + static_cast<std::ptrdiff_t>(src_off_ + n_drafts_));
  step_host_[minus_one] = -1;
  const auto host_token = [&](int64_t row) { return static_cast<int32_t>(n_drafts_ + row); };
  const auto no_draft = static_cast<int32_t>(n_drafts_ + n_rows_);
  for (size_t i = 0; i < n; ++i) {
    const Seq& s = seqs[i];
    ops::SampleRow p;
    if (s.request) {
      const SamplingParams& sp = s.request->params;
      // A prefill chunk that does not end the prompt decides nothing: the cheap greedy path.
      p.temperature = s.decides ? static_cast<float>(sp.temperature) : 0.0f;
      p.top_k = sp.top_k;
      p.top_p = static_cast<float>(sp.top_p);
      p.min_p = static_cast<float>(sp.min_p);
      p.seed_lo = static_cast<uint32_t>(s.request->seed);
      p.seed_hi = static_cast<uint32_t>(s.request->seed >> 32);
    }
    const bool drafted = s.decode && s.rows > 1;
    for (int64_t j = 0; j < s.rows; ++j) {
      const int64_t row = cur_.row_begin[i] + j;
      step_host_[ids_idx_off_ + static_cast<size_t>(row)] =
          drafted && j > 0 ? static_cast<int32_t>(cur_.draft_begin[i] + j - 1) : host_token(row);
    }
    for (int64_t j = 0; j < cur_.logit_count[i]; ++j) {
      // Logits row j of a decode entry follows position pos0 + j; a prefill
      // entry's one row is the chunk's last.
      const int64_t row_pos = s.decode ? s.pos0 + j : s.pos0 + s.rows - 1;
      p.position = static_cast<int32_t>(row_pos + 1);
      p.draft = -1;  // drafted rows get theirs on the backend
      const size_t at = static_cast<size_t>((cur_.logit_begin[i] + j) * kWords);
      std::memcpy(step_host_.data() + at, &p, sizeof p);
      step_host_[draft_idx_off_ + static_cast<size_t>(cur_.logit_begin[i] + j)] =
          drafted && j < s.rows - 1 ? static_cast<int32_t>(cur_.draft_begin[i] + j) : no_draft;
    }
    step_host_[static_cast<size_t>(n_logit_rows_ * kWords) + i] = static_cast<int32_t>(cur_.logit_begin[i]);
  }
  step_host_[static_cast<size_t>(n_logit_rows_ * kWords + n_seqs_)] = static_cast<int32_t>(n_logit_rows_);

  ops::Backend& be = target_.backend();
  const ops::Tensor all =
      model::grow_tensor(be, step_, ops::DType::I32, static_cast<int64_t>(step_host_.size()), 1);
  be.upload(all, step_host_.data(), ops::DType::I32);

  // 4. A step in which every sequence drafts, on a backend with a queue of
  // its own, writes the drafter context of all its rows in the step, beside
  // the target's last layers (enqueue_step): recorded with the step instead
  // of an upload and ~8 launches after it (H100, shipped pair, DFlash at
  // concurrency 1: 7-9% more tokens/s). Rows past the committed ones hold
  // rejected drafts; nothing reads them before they are written again: the
  // request's next drafter block covers them.
  cur_.context_in_step = drafting_ && (be.supports_graphs() || options_.overlap) && !target_.shard().active() &&
                     std::all_of(seqs.begin(), seqs.end(), [](const Seq& s) { return s.decode && s.rows > 1; });
  if (cur_.context_in_step) {
    model::BatchContext rows;
    for (size_t i = 0; i < n; ++i)
      rows.seqs.push_back({cur_.row_begin[i], seqs[i].rows, seqs[i].pos0, seqs[i].table, false});
    drafter_->prepare_context(rows, *pool_, target_layers_, min_keys);
  }
  model::grow_tensor(be, sampled_, ops::DType::I32, n_logit_rows_, 1);
  model::grow_tensor(be, verdicts_dev_, ops::DType::I32, n_seqs_, 2);
}

void ModelRunner::enqueue_step() {
  ops::Backend& be = target_.backend();
  const ops::Tensor all = step_.buffer.view(ops::DType::I32, static_cast<int64_t>(step_host_.size()), 1);
  const ops::Tensor rows = all.row_slice(0, n_logit_rows_ * kWords).reshape(n_logit_rows_, kWords);
  const ops::Tensor seq_start = all.row_slice(n_logit_rows_ * kWords, n_seqs_ + 1);
  if (drafting_) {
    const ops::Tensor src = all.row_slice(static_cast<int64_t>(src_off_), n_drafts_ + n_rows_ + 1);
    drafter_->forward_prepared(*pool_, target_layers_);
    target_.argmax(drafter_->draft_logits(), src.row_slice(0, n_drafts_));
    be.gather_rows(src, all.row_slice(static_cast<int64_t>(ids_idx_off_), n_rows_).as<int32_t>(),
                   target_.input_ids());
    be.gather_rows(src, all.row_slice(static_cast<int64_t>(draft_idx_off_), n_logit_rows_).as<int32_t>(),
                   rows.col_slice(kDraftWord, 1));
  }
  if (cur_.context_in_step) {
    // The drafter's context write reads only the taps: it starts as soon as
    // the last one is written and runs beside the target's remaining layers
    // and head, which touch neither its scratch nor the drafter's pool
    // layers. (H200, Qwen3-8B pair, ctx 1k: it was a second graph of 88 us
    // after the step; bench_cycle's cycle went from 6.10 to 6.07 ms at batch
    // 1 and from 11.24 to 11.19 at batch 8. Written at that point in order,
    // without the second queue: 6.09 and 11.22.)
    target_.on_taps_written([this, &be] {
      struct Beside {
        ops::Backend& be;
        explicit Beside(ops::Backend& b) : be(b) { be.begin_beside(); }
        ~Beside() { be.end_beside(); }
      } beside(be);
      drafter_->write_context_prepared(target_.taps_tensor().row_slice(0, n_rows_), *pool_, target_layers_);
    });
  }
  struct Unhook {
    model::Qwen3Model& m;
    ~Unhook() { m.on_taps_written(nullptr); }
  } unhook{target_};
  target_.forward_prepared(*pool_);
  be.join_beside();
  if (drafter_ && !drafting_ && !taps_in_store_) {
    // Recorded whatever this step sets aside (its rows say where, or -1).
    be.scatter_rows(target_.taps_tensor(),
                    all.row_slice(static_cast<int64_t>(aside_idx_off_), n_rows_).as<int32_t>(), pending_taps_.t);
  }
  if (target_.shard().active()) {
    // Tensor parallelism: a greedy step needs only the argmax of each row
    // (verdicts_from_tokens); any other gathers the logits first.
    const ops::Tensor tokens = sampled_.buffer.view(ops::DType::I32, n_logit_rows_, 1);
    if (!gather_) return target_.argmax(target_.logits_tensor(), tokens);
    target_.gather_logits();
  }
  if (penalties_.active()) {
    const ops::Tensor drafts = drafting_ ? all.row_slice(static_cast<int64_t>(src_off_), n_drafts_) : ops::Tensor{};
    penalties_.enqueue(be, target_.logits_tensor(), drafts);
  }
  be.accept(target_.logits_tensor(), rows, seq_start, sampled_.buffer.view(ops::DType::I32, n_logit_rows_, 1),
            verdicts_dev_.buffer.view(ops::DType::I32, n_seqs_, 2));
}

void ModelRunner::launch(const GraphKey* key) {
  cur_.recorded = false;
  replay(graphs_, key, [this] { enqueue_step(); });
}

void ModelRunner::replay(std::map<GraphKey, Recorded>& graphs, const GraphKey* key, const std::function<void()>& work) {
  if (!key) return work();
  Recorded& g = graphs[*key];
  const uint64_t moves = model::buffer_moves();
  if (g.graph && g.moves == moves) return g.graph->replay();
  cur_.recorded = true;
  if (!g.warmed || g.moves != moves) {
    // First meeting (or the buffers moved): run it, which also sizes what
    // ops size lazily, and record next time.
    g.graph.reset();
    g.warmed = true;
    g.moves = moves;
    return work();
  }
  g.graph = target_.backend().capture(work);
  if (!g.graph) {
    graphs_on_ = false;
    return work();
  }
  g.graph->replay();
}

ModelRunner::Verdict ModelRunner::verdict(size_t entry) const {
  return Verdict{done_.verdicts[2 * entry], done_.verdicts[2 * entry + 1]};
}

std::vector<float> ModelRunner::logits(size_t entry, int64_t count) const {
  if (count < 0 || count > done_.logit_count[entry]) count = done_.logit_count[entry];
  const ops::Tensor* raw = penalties_.raw(entry);
  const ops::Tensor rows =
      raw ? raw->row_slice(0, count) : target_.logits_tensor().row_slice(done_.logit_begin[entry], count);
  std::vector<float> out(static_cast<size_t>(rows.numel()));
  target_.backend().download(rows, out.data());
  return out;
}

std::span<const int32_t> ModelRunner::drafts(size_t entry) const {
  return std::span<const int32_t>(done_.drafts)
      .subspan(static_cast<size_t>(done_.draft_begin[entry]), static_cast<size_t>(done_.draft_count[entry]));
}

void ModelRunner::write_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks) {
  if (!drafter_) return;
  if (ranks_ && !dispatching_) return on_every_rank([&](ModelRunner& r) { r.write_context(plan, keep, blocks); });
  const auto t0 = std::chrono::steady_clock::now();
  struct AddHostTime {
    double& total;
    std::chrono::steady_clock::time_point t0;
    ~AddHostTime() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } add{done_.host_seconds, t0};
  if (std::exchange(done_.set_aside, false)) return;        // the step set its rows aside
  if (std::exchange(done_.context_in_step, false)) return;  // the step wrote every row (enqueue_step)
  // The rows of requests that drafted are written now (their next draft
  // reads them); the others' (prefill chunks, requests that did not draft)
  // wait, as in a step where nobody drafted.
  model::BatchContext ctx;
  tap_rows_.clear();
  step_rows_.assign(plan.entries.size(), 0);
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const ScheduledRequest& e = plan.entries[i];
    if (keep[i] <= 0) continue;
    if (!verifies_drafts(e)) {
      step_rows_[i] = keep[i];
      continue;
    }
    ctx.seqs.push_back({static_cast<int64_t>(tap_rows_.size()), keep[i], e.pos0, blocks.table(e.request->id), false});
    for (int64_t r = 0; r < keep[i]; ++r) tap_rows_.push_back(static_cast<int32_t>(done_.row_begin[i] + r));
  }
  if (!ctx.seqs.empty()) write_taps(target_.taps_tensor(), tap_rows_, ctx);
  defer_context(plan, step_rows_, blocks);
}

int64_t ModelRunner::book_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks) {
  int64_t m = 0;
  for (size_t i = 0; i < plan.entries.size(); ++i) m += std::max<int64_t>(keep[i], 0);
  if (m > pending_capacity_)  // the store holds at least max_rows, a step's most
    throw std::logic_error("model runner: a step sets aside more rows than the taps' store holds");
  if (m > 0 && pending_used_ + m > pending_capacity_) flush_context(blocks);
  const int64_t first = pending_used_;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    if (keep[i] <= 0) continue;
    const ScheduledRequest& e = plan.entries[i];
    pending_[e.request->id].push_back({e.pos0, pending_used_, keep[i]});
    pending_used_ += keep[i];
    context_writes_.set_aside += keep[i];
  }
  return first;
}

void ModelRunner::defer_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks) {
  int64_t row = book_context(plan, keep, blocks);
  // Copied on the backend to the rows just booked, one copy per run of
  // consecutive rows (entries lie in row order; usually one run).
  ops::Backend& be = target_.backend();
  const ops::Tensor& taps = target_.taps_tensor();
  const ops::Tensor& store = pending_taps_.t;
  int64_t run_begin = 0, run_rows = 0;
  auto copy_run = [&] {
    if (run_rows > 0) be.copy(taps.row_slice(run_begin, run_rows), store.row_slice(row - run_rows, run_rows));
  };
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    if (keep[i] <= 0) continue;
    if (run_begin + run_rows != done_.row_begin[i]) {
      copy_run();
      run_begin = done_.row_begin[i];
      run_rows = 0;
    }
    run_rows += keep[i];
    row += keep[i];
  }
  copy_run();
}

void ModelRunner::forget(RequestId id) {
  // Host bookkeeping only: the ranks' runners are idle between steps.
  for (auto& peer : peers_) peer->forget(id);
  if (pending_.erase(id) > 0 && pending_.empty()) pending_used_ = 0;
}

void ModelRunner::in_position_order(std::vector<PendingRun>& runs) {
  bool ordered = true;
  for (size_t k = 1; k < runs.size() && ordered; ++k) ordered = runs[k].pos >= runs[k - 1].pos + runs[k - 1].count;
  if (ordered) return;  // the usual case: nothing was set aside twice
  // A preempted request computed its rows again: one entry per row, sorted
  // stably by position, the later of each position's entries kept.
  std::vector<PendingRun> rows;
  for (const PendingRun& r : runs)
    for (int64_t j = 0; j < r.count; ++j) rows.push_back({r.pos + j, r.row + j, 1});
  std::stable_sort(rows.begin(), rows.end(), [](const PendingRun& a, const PendingRun& b) { return a.pos < b.pos; });
  runs.clear();
  for (size_t k = 0; k < rows.size(); ++k)
    if (k + 1 == rows.size() || rows[k + 1].pos != rows[k].pos) runs.push_back(rows[k]);
}

void ModelRunner::flush_context(const BlockManager& blocks, const std::vector<RequestId>* only) {
  // Per request, runs of consecutive positions, each one sequence of a
  // write, in writes of at most catch_up_rows_ rows and max_seqs sequences
  // (what the writes' buffers were reserved for). Rows of a
  // request that finished or was preempted since (its table no longer
  // covers them) are dropped; of a row set aside twice (a preempted request
  // computed it again) the later one is written.
  if (pending_.empty()) return;
  const int64_t written_before = context_writes_.rows;
  const ops::Tensor store = pending_taps_.t.row_slice(0, pending_used_);
  model::BatchContext ctx;
  std::vector<int32_t> rows;
  auto write = [&] {
    if (!ctx.seqs.empty()) write_taps(store, rows, ctx);
    ctx.seqs.clear();
    rows.clear();
  };
  for (auto it = pending_.begin(); it != pending_.end();) {
    const RequestId id = it->first;
    if (only && !std::binary_search(only->begin(), only->end(), id)) {
      ++it;
      continue;
    }
    std::vector<PendingRun>& list = it->second;
    in_position_order(list);
    const int64_t capacity = blocks.capacity(id);
    bool fresh = true;  // the next row starts a sequence
    for (const PendingRun& run : list) {
      // The run's rows below the capacity, in pieces that each fit the
      // write being filled (a whole run at a time, not row by row: a
      // catch-up after a long prompt is thousands of rows).
      const int64_t end = std::min(run.pos + run.count, capacity);
      for (int64_t pos = run.pos; pos < end;) {
        const bool extends = !fresh && ctx.seqs.back().pos0 + ctx.seqs.back().n_rows == pos;
        if (static_cast<int64_t>(rows.size()) == catch_up_rows_ ||
            (!extends && static_cast<int64_t>(ctx.seqs.size()) == options_.max_seqs)) {
          write();
          fresh = true;
        }
        const int64_t take = std::min(end - pos, catch_up_rows_ - static_cast<int64_t>(rows.size()));
        if (!fresh && extends) {
          ctx.seqs.back().n_rows += take;
        } else {
          ctx.seqs.push_back({static_cast<int64_t>(rows.size()), take, pos, blocks.table(id), false});
        }
        fresh = false;
        const auto first = static_cast<int32_t>(run.row + (pos - run.pos));
        const size_t at = rows.size();
        rows.resize(at + static_cast<size_t>(take));
        std::iota(rows.begin() + static_cast<std::ptrdiff_t>(at), rows.end(), first);
        pos += take;
      }
      if (end < run.pos + run.count) fresh = true;  // the rest of the run lies past the capacity
    }
    it = pending_.erase(it);
  }
  write();
  if (pending_.empty()) pending_used_ = 0;
  context_writes_.caught_up += context_writes_.rows - written_before;
}

void ModelRunner::write_taps(const ops::Tensor& taps, std::span<const int32_t> rows_of, const model::BatchContext& ctx) {
  const auto m = static_cast<int64_t>(rows_of.size());
  context_writes_.rows += m;
  ++context_writes_.writes;
  bool consecutive = true;
  for (int64_t i = 1; i < m && consecutive; ++i) consecutive = rows_of[i] == rows_of[0] + i;
  if (consecutive) return drafter_->write_context(taps.row_slice(rows_of[0], m), ctx, *pool_, target_layers_);
  // The rows' taps, gathered on the backend: they never visit the host.
  ops::Backend& be = target_.backend();
  const ops::Tensor rows = model::grow_tensor(be, tap_row_ids_, ops::DType::I32, m, 1);
  be.upload(rows, rows_of.data(), ops::DType::I32);
  const ops::Tensor kept = model::grow_tensor(be, ctx_taps_, taps.dtype, m, taps.cols);
  be.gather_rows(taps, rows.as<int32_t>(), kept);
  drafter_->write_context(kept, ctx, *pool_, target_layers_);
}

}  // namespace flashdraft::engine
