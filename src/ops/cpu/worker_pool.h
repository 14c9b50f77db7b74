#pragma once
// A few long-lived helper threads for the CPU ops that split their work
// (matmul_small). Starting a std::thread costs tens of microseconds, more
// than a decode row's projections take, so only huge calls used to split;
// with threads that wait for work, a 16-row verify block's projections and
// its lm head run on every core too.
//
// Workers spin briefly after each job (the next matmul of a forward follows
// within microseconds), then sleep, so an idle engine burns no CPU.
#include <cstdint>
#include <functional>

namespace flashdraft::ops::cpu {

// Runs task(i) for every i in [0, tasks), on the calling thread and up to
// tasks - 1 pool threads, and returns when all are done. One caller at a
// time: a caller that finds the pool busy (tensor-parallel ranks, say) runs
// every task itself, so a task must give the same result on any thread.
// Every task runs even when one throws; the first exception is rethrown here
// once all have ended.
void run_tasks(int64_t tasks, const std::function<void(int64_t)>& task);

}  // namespace flashdraft::ops::cpu
