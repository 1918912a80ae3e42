// Package nemesis adds seeded random faults to a scenario run, swarm
// style (Groce et al., "Swarm Testing", ISSTA 2012): a seed first enables
// a random subset of the fault kinds, then schedules a few faults of those
// kinds at random virtual times within the scenario's span, each with its
// recovery where it has one (the node returns, the plugin restarts, the
// hang is healed), aimed only at what the scenario's cluster has: its
// nodes, its driver's plugins, its components. The faults are the fault
// steps the scenario DSL already has (package fault); the runner fires
// them at their virtual times (scenarios.Runner.Timed).
//
// Generate (the schedule), Minimize and ShiftEarlier (the shrinker),
// Classify (the verdict) and Reproducer (the shrunk scenario file) are
// pure functions over data; Harness runs the scenario on fresh clusters.
//
// What counts as a failure under the nemesis: a fault may legitimately
// keep a scenario's own step from passing — a wait with a short timeout
// while its node is lost, an exact csiCalls sequence that a retried call
// lengthens — so a step that fails with no invariant broken is reported as
// a liveness result (Liveness), not a failure. Failures are what no fault
// excuses: an invariant violated (at the end, or by the time a step
// failed), a driver process that died on its own, a crash of the process
// that ran the simulation (seen when Harness.RunTrial runs it in a child),
// a fault that could not be injected, any other error of the run. Harness.Liveness (csisim run
// --liveness) counts step failures too, for a scenario whose steps are
// meant to survive the faults.
package nemesis
