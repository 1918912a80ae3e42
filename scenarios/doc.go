// Package scenario reads scenario files — YAML scripts that drive a cluster
// through a storage story step by step — and runs them against a Backend.
//
// A scenario is a list of steps. Each step does exactly one thing: apply
// manifests, wait for a condition, assert a condition once, delete an object
// or sleep. Waits and asserts can save values (${name}) for later steps, and
// can check the CSI calls a driver received when the backend can see them.
//
// Load and Parse check a file completely before anything runs, so a typo is
// reported as file:line with the problem, not discovered halfway through a
// run. Runner.Run executes the steps in order and stops at the first failure
// with a *StepError that says which step failed, what it expected and what it
// last saw.
//
// The file format is documented for users in scenarios/README.md.
package scenario
