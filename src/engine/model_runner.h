#pragma once
// Turns one scheduled step into model calls: one batched drafter pass that
// drafts for every decoding request, one batched target forward over all the
// step's rows (prefill chunks, verify rows [anchor, d1..dk], plain decode rows
// when there is no drafter) with one BatchContext, sampling and draft
// acceptance on the backend (Backend::accept over every entry's logits rows,
// each request's own seed and filters), and, once the engine knows what was
// committed, one batched write of the drafter's context K/V for the newly
// committed rows (or, in a step where nobody drafted, their taps set aside
// until their request drafts: write_context). Stops and request state are
// the engine's business.
//
// A step's inputs go up in three uploads (drafter, target, sampling; a
// fourth for the drafter's context write where the step writes it itself,
// see prepare()), its drafts never leave the backend before the target has
// verified them (the drafter's argmax is gathered into the target's input
// ids and into the acceptance rows there), and it comes back in two small
// downloads (verdicts, drafts). Between them the work is ops only (a
// context write in the step runs beside the target's layers after its last
// tap), so on a backend with graphs a decode step (every entry decoding with
// the same row count) is one recorded graph per (batch bucket, rows, context
// bucket): the batch is padded to the bucket with sequences that live in
// scratch KV blocks past the block manager's, and the launch grids are
// sized for the context bucket. Buckets
// of batch size are captured at start-up (capture_graphs), others on first
// use; --enforce-eager turns graphs off. Every op is batch invariant, so
// padding changes no request's bits.
//
// The pool holds the target's layers at [0, L_target) and the drafter's at
// [L_target, L_target + L_draft); both read the request's one block table.
//
// Tensor parallelism (a target from Qwen3Model::load_sharded): this runner
// drives rank 0 and runs every call on all ranks at once
// (model_runner_ranks.cpp); greedy steps verify from the combined argmax
// of the vocabulary shards, others gather the logits first. No graphs yet.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "engine/block_manager.h"
#include "engine/penalty_step.h"
#include "engine/scheduler.h"
#include "model/batch.h"
#include "model/dflash_drafter.h"
#include "model/kv_pool.h"
#include "model/qwen3_model.h"
#include "parallel/rank_threads.h"

namespace flashdraft::engine {

struct RunnerOptions {
  bool enforce_eager = false;  // no graphs even where the backend has them
  int64_t max_seqs = 8;        // most requests in one step (the largest batch bucket)
  int64_t max_rows = 512;      // most rows in one step (buffers are sized for it at start)
  int64_t max_keys = 4096;     // most positions a request reaches (context limit + a decode step's reach)
  int64_t spec_rows = 1;       // rows of a decode step at full speculation
  // Steps are launched behind one another (Engine's overlapped scheduling):
  // a step in which everyone drafts writes its rows' drafter context itself
  // on any backend, as on a GPU (prepare()), so the next one can follow it.
  bool overlap = false;
  // Committed rows whose drafter context waits (see write_context) keep
  // their target taps aside in up to this much backend memory, but room for
  // at least max_rows rows. 128 MiB: ~58k rows of the shipped pair's bf16
  // taps on a GPU (every prompt of a busy long-context step), ~3k of an
  // 8B target's 5 x 4096.
  int64_t pending_bytes = int64_t{128} << 20;
  // A request's waiting rows are written when it drafts again in pieces of
  // up to this much scratch memory (gathered taps and the drafter's
  // activations), but at least max_rows rows: on a GPU each piece is ~6
  // launches and an upload whatever its size, so the shipped pair writes a
  // long prompt at once instead of in max_rows pieces, while an 8B pair's
  // pieces stay at max_rows (its writes are bound by their GEMMs).
  int64_t catch_up_bytes = int64_t{32} << 20;
};

// Drafter context writes so far (write_context), for benchmarks: rows
// written, in how many writes; rows whose taps were set aside to wait, and
// how many of those have been written since.
struct ContextWrites {
  int64_t rows = 0, writes = 0, set_aside = 0, caught_up = 0;
};

// What capture_graphs did, for the start-up log line.
struct GraphCaptureReport {
  bool enabled = false;  // false: eager (--enforce-eager, or a backend without graphs)
  int64_t graphs = 0;
  double seconds = 0;
  std::vector<int64_t> batch_sizes;
};

class ModelRunner {
 public:
  // drafter may be null (plain decoding). Target taps are switched on only
  // with a drafter, at the drafter's target_layer_ids.
  ModelRunner(model::Qwen3Model& target, model::DFlashDrafter* drafter, int64_t num_blocks, int64_t block_size,
              const RunnerOptions& options = {});
  ~ModelRunner();

  // Records the decode graphs of every batch bucket at the shortest context
  // bucket, for plain rows and (with a drafter) every length of
  // graph_draft_lengths(). Longer contexts are recorded when first met.
  GraphCaptureReport capture_graphs();
  bool graphs_enabled() const { return graphs_on_; }
  // The context bucket a recorded step of up to `keys` positions is sized for.
  int64_t keys_bucket(int64_t keys) const;
  // The draft lengths whose decode steps are recorded at start-up: 0, then
  // 2^i - 1 below the drafter's block, then spec_rows - 1 (0 1 3 7 15 for a
  // 16-row block). Adaptive speculation chooses among these where steps are
  // replayed: any other length would record a graph mid-run (two slow
  // steps of a millisecond or more, each new length at each context bucket).
  // Verifying a few drafts more costs little on a GPU at the batches where
  // drafting pays. Empty without graphs or a drafter.
  const std::vector<int64_t>& graph_draft_lengths() const { return graph_lengths_; }
  // Whether the last run() ran a step first met (eagerly, to size lazily
  // sized buffers) or recorded one: slower than the step will be from then
  // on, so not a measurement of what it costs.
  bool last_run_recorded() const { return done_.recorded; }
  // Host time of the last run() until it waited for the backend, plus that
  // of the write_context() after it (benchmarks).
  double last_host_seconds() const { return done_.host_seconds; }

  // What the target decided for one plan entry: a decode entry keeps
  // drafts(i)[0, accepted) and then `token` (its bonus, or its one sampled
  // token without drafts); a prefill entry's token is sampled from its last
  // row (meaningful on the chunk that completes the prefill; accepted is 0).
  // token is -1 when the logits could not be sampled (NaN, +inf, all -inf).
  struct Verdict {
    int32_t accepted = 0;
    int32_t token = -1;
  };

  // Drafts (decode entries with rows > 1), runs the target over the plan and
  // samples / verifies every entry on the backend. while_running (optional)
  // is called once the step is launched and before its verdicts are waited
  // for: host work that can overlap the backend's.
  void run(const StepPlan& plan, const BlockManager& blocks, const std::function<void()>& while_running = {});

  // run() in halves, for overlapped scheduling. launch() queues the step and
  // returns without waiting; finish() waits for the oldest launched step's
  // results, which verdict(), drafts(), logits() and write_context() then
  // read. `ahead`: the plan of the step launched just before and not yet
  // finished (follow_ok()); every entry of `plan` is then a decode entry of
  // one of its requests, planned as if that request's entry there kept all
  // its drafts (pos0 = its pos0 + rows), and the backend puts in what it
  // kept (its verdicts, Backend::carry_forward) before the step runs: token
  // for token the step the host would have planned after reading them.
  void launch(const StepPlan& plan, const BlockManager& blocks, const StepPlan* ahead = nullptr);
  void finish();
  // Whether a step may be launched behind the one in flight before its
  // results are read: one step in flight, whose results need nothing the
  // next step overwrites (its taps, for a context write after it; its
  // logits, for penalties), and no tensor parallelism.
  bool follow_ok() const;
  // Waits for the backend and drops every launched step's results (after a
  // step threw).
  void abandon();

  Verdict verdict(size_t entry) const;
  // The draft tokens of plan entry i (decode entries; rows - 1 of them).
  std::span<const int32_t> drafts(size_t entry) const;
  // The target's raw logits for plan entry i (before penalties), downloaded
  // on request (tests, log-probabilities): every row of a decode entry, or
  // its first `rows` when rows >= 0, the last row of a prefill chunk.
  // [rows, vocab], valid until the next run().
  std::vector<float> logits(size_t entry, int64_t rows = -1) const;

  // Writes drafter context K/V for the first keep[i] rows of each plan entry
  // (rows whose tokens are now committed). No-op without a drafter, and
  // where run() queued the write of the step's rows itself (every entry
  // drafted, on a backend with a queue of its own: prepare()).
  //
  // In a step where nobody drafted (adaptive speculation's k = 0 for every
  // decoding request, prefill chunks, plain rows) the rows wait instead:
  // their taps go to a store on the backend (no upload, no gather: where
  // nobody drafts, the step itself moves them there, recorded in its graph;
  // beside drafting requests, one device copy per run of consecutive rows
  // after the step), and a request's waiting rows are written in the step
  // in which it next drafts, before the drafter runs (in writes of up to
  // RunnerOptions::catch_up_bytes), or when the taps set aside would pass
  // RunnerOptions::pending_bytes (then everyone's); those of a request that
  // finishes or loses its blocks first are never written. So a request that
  // does not draft costs about what plain decoding costs (a write is ~6
  // launches and an upload on a GPU: at a long-context point where nobody
  // drafts, the prompts' writes were most of adaptive's loss to plain), one
  // that never drafts never has its context written, and any request can
  // draft again any step (its context is complete by then). In a step in
  // which some requests drafted, their rows are written at once (their next
  // draft reads them) and the others' wait: a prefill chunk beside one
  // drafting request is not written for it.
  void write_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks);

  const ContextWrites& context_writes() const { return context_writes_; }
  // A finished request: its rows still waiting are never written (between
  // steps; every rank).
  void forget(RequestId id);

  int64_t vocab() const { return vocab_; }
  bool has_drafter() const { return drafter_ != nullptr; }
  model::KVPool& pool() { return *pool_; }

 private:
  // One sequence of the step as the models see it (a plan entry or a pad).
  struct Seq {
    bool decode = false;
    bool decides = true;  // its last row's token is used (not a prefill chunk before the last)
    int64_t rows = 0, pos0 = 0;
    std::span<const int32_t> table;
    const Request* request = nullptr;  // null for a pad
  };
  // (batch size, rows per sequence, drafting, min_keys): one recorded decode step.
  using GraphKey = std::tuple<int64_t, int64_t, bool, int64_t>;

  // A step's layout (per plan entry) and results, from launch() until the
  // next step is finished.
  struct Step {
    std::vector<int64_t> logit_begin, logit_count, draft_begin, draft_count, row_begin;
    std::vector<int32_t> verdicts, drafts;  // downloads land here
    size_t entries = 0;
    bool context_in_step = false;  // the step writes its rows' drafter context itself (enqueue_step)
    bool set_aside = false;        // it set its rows aside (nobody drafts)
    bool penalized = false;
    bool recorded = false;  // it ran a step first met, or recorded one
    double host_seconds = 0;
    uint64_t downloads = 0;  // Backend::mark_downloads after its downloads
    int lag = -1;  // which of lags_ holds how far its positions were off the host's (-1: not at all)
  };
  // The fixes of the prepared step (seqs: with pads) from the verdicts of
  // `ahead`, uploaded and queued (launch).
  void follow(const StepPlan& ahead, const StepPlan& plan, size_t n_seqs);
  // Uploads the step's inputs for `seqs` (the plan's entries, then pads).
  void prepare(std::span<const Seq> seqs, int64_t min_keys);
  // The step's ops: draft, drafts into the target's ids and the acceptance
  // rows, target forward, accept.
  void enqueue_step();
  // Runs the prepared step: replays (recording first if needed) the graph
  // for `key`, or enqueues the ops directly when key is null.
  void launch(const GraphKey* key);
  // Queues the downloads of the verdicts and drafts of the plan's n entries.
  void download_results(size_t n);
  struct Recorded;
  void replay(std::map<GraphKey, Recorded>& graphs, const GraphKey* key, const std::function<void()>& work);
  // The graph bucket of a decode step of n sequences (0: none fits).
  int64_t batch_bucket(int64_t n) const;
  std::vector<Seq> pads(int64_t n, int64_t rows) const;
  // Writes the waiting rows' drafter context (see write_context): of the
  // requests in `only` (sorted), or of everyone.
  void flush_context(const BlockManager& blocks, const std::vector<RequestId>* only = nullptr);
  // Books the first keep[i] rows of each entry as waiting (see
  // write_context) in consecutive store rows, in entry order, and returns
  // the first; flushes everyone's waiting rows first where the store is full.
  int64_t book_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks);
  // Books them and copies their taps into the store, after the step.
  void defer_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks);
  // Drafter context for ctx's rows from rows `rows_of` of `taps` (gathered
  // on the backend unless they are consecutive).
  void write_taps(const ops::Tensor& taps, std::span<const int32_t> rows_of, const model::BatchContext& ctx);
  // Tensor parallelism (model_runner_ranks.cpp).
  void start_ranks();
  void on_every_rank(const std::function<void(ModelRunner&)>& fn);
  bool needs_all_logits(const StepPlan& plan) const;
  void verdicts_from_tokens(size_t n);

  model::Qwen3Model& target_;
  model::DFlashDrafter* drafter_;
  RunnerOptions options_;
  int64_t vocab_, target_layers_, num_blocks_, block_size_;
  std::unique_ptr<model::KVPool> pool_;
  std::vector<int32_t> scratch_table_;  // blocks past the block manager's, for pads

  bool graphs_on_ = false;
  std::vector<int64_t> buckets_, graph_lengths_;
  struct Recorded {
    std::unique_ptr<ops::Graph> graph;
    uint64_t moves = 0;  // model::buffer_moves() when recorded
    bool warmed = false;
  };
  std::map<GraphKey, Recorded> graphs_;
  // Penalties and logit bias of this step; a step that has them runs eagerly.
  PenaltyStep penalties_;

  // The step being launched, those launched and not finished, the last finished.
  Step cur_, done_;
  std::deque<Step> flying_;
  int64_t n_seqs_ = 0, n_rows_ = 0, n_logit_rows_ = 0, n_drafts_ = 0;
  bool drafting_ = false;
  bool following_ = false;  // launching a step behind one whose results are unread
  bool taps_in_store_ = false;  // this eager step's forward writes its taps straight into the store
  std::vector<int64_t> step_rows_;
  int64_t aside_first_ = 0, aside_rows_ = 0;  // where the step's first aside_rows_ rows go in the store
  // Host copies and backend buffers. step_ holds, as i32: the sampling rows
  // [n_logit_rows, kWords], their sequences' starts [n_seqs + 1], then the
  // gather source [drafts (written by the drafter's argmax) | the target's
  // host-known ids | -1], the target's ids as indices into that source,
  // each logits row's draft as such an index, and each row's store row in
  // pending_taps_ (-1: not set aside).
  std::vector<int32_t> tokens_, anchors_, tap_rows_, step_host_;
  std::vector<ops::InputFix> fix_host_;
  ops::OwnedTensor step_, sampled_, verdicts_dev_, tap_row_ids_, ctx_taps_, fixes_, lags_[2];
  size_t src_off_ = 0, ids_idx_off_ = 0, draft_idx_off_ = 0, aside_idx_off_ = 0;
  // Committed rows whose drafter context waits (write_context): per request,
  // runs of consecutive positions in commit order, each with where its taps
  // start in pending_taps_, which is filled from the front (pending_used_
  // rows) and starts over once nothing waits. Runs, not rows: a prefill
  // chunk of a thousand rows is one entry to book and to sort.
  struct PendingRun {
    int64_t pos = 0, row = 0, count = 0;
  };
  // Sorts a request's waiting runs by position, each position once (the
  // later of two bookings of a position wins).
  static void in_position_order(std::vector<PendingRun>& runs);
  std::map<RequestId, std::vector<PendingRun>> pending_;
  ops::OwnedTensor pending_taps_;
  int64_t pending_used_ = 0;
  int64_t pending_capacity_ = 0;  // rows (RunnerOptions::pending_bytes)
  int64_t catch_up_rows_ = 0;     // rows of one catch-up write (RunnerOptions::catch_up_bytes)
  int64_t tap_width_ = 0;         // columns of a row of taps
  ContextWrites context_writes_;

  // Tensor parallelism: the other ranks' runners and threads; whether this
  // step gathers the logits; whether a call is already running on every rank.
  std::vector<std::unique_ptr<ModelRunner>> peers_;
  std::unique_ptr<parallel::RankThreads> ranks_;
  bool gather_ = false, dispatching_ = false;
};

}  // namespace flashdraft::engine
