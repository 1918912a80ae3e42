// Package scenarios reads scenario files — YAML scripts that drive a cluster
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
// A scenario is written for any CSI driver: the driver under test is a
// driver profile (Runner.Profile, package drivers/profile), which steps
// see as ${driver.*} variables, and a scenario whose needs the profile
// lacks is skipped with the reason (Scenario.SkipReason, Result.Skipped)
// rather than run. Steps may also hold a condition for a span
// (consistently), compare partial objects (match), come from another file
// (include), and clean up after the others whatever happened (finally).
//
// The file format is documented for users in scenarios/README.md.
package scenarios

//go:generate go test -run ^TestStatusDocLibraryTable$ -update-status .
