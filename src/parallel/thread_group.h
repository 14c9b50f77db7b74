#pragma once
// The in-process collectives: each rank is a thread of this process with its
// own CPU backend, and a collective is a rendezvous over shared memory
// (every rank publishes its pointer, waits for the others, reads theirs).
// Sums go in rank order (rank 0 first) on every rank, so every rank holds
// the same bits and runs repeat exactly.
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace flashdraft::parallel {

std::vector<std::unique_ptr<Communicator>> make_thread_group(int size);

}  // namespace flashdraft::parallel
