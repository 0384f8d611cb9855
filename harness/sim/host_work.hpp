#pragma once
// Host-side work of a fixed size, and CPU clocks to measure work by.
//
// perfgate-sim's knobs change the amount of work a step does, never a wait
// of fixed wall time: a spin that ends at a wall-clock deadline does less
// work when the machine is busy (the thread is descheduled while its deadline
// passes) and overshoots by a whole time slice when it is preempted near the
// end, so its share of a step changed with the machine's load and CPU, and
// effects measured against it did not hold on every machine.

#include <cstdint>

namespace perfgate::sim {

// `thousands` x 1,000 steps of a dependent integer chain (multiply, xor):
// each step waits for the one before, so it costs the multiplier's latency
// (3 cycles, plus 1 for the xor, on every x86-64 core since 2011 and on
// current Arm cores), whatever the vector width. What a framework's launch
// path or a compiler pass is made of: scalar, serial host code.
void host_work(double thousands);

// CPU seconds this thread, or this whole process, has run (not waited).
double thread_cpu_s();
double process_cpu_s();

// Runs host work until this thread has spent `seconds` more CPU time:
// an amount of work, which a busy machine stretches in wall time as it
// stretches any other work, never shortens.
void burn_thread_cpu(double seconds);

}  // namespace perfgate::sim
