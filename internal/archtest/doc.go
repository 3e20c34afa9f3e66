// Package archtest holds the test of gradtune's import rules, checked on
// the non-test imports of each package, transitively (go list -deps):
//
//   - variants imports nothing of kernels (any kernels/...);
//   - configs imports the standard library only: what a trainer embeds
//     (the tables, the launch contract, the element types) depends on
//     nothing else, and it builds with CGO_ENABLED=0 (checked, with
//     launch and examples/trainer, by TestTrainerPackagesBuildWithoutCgo);
//   - dtype imports the standard library and configs only: its names are
//     aliases of configs' element types;
//   - store imports neither runner nor kernels (any of their packages);
//   - runner (any runner/...) imports neither store, nor the catalog (a
//     worker serves the families its caller gives it), nor the planted
//     faults (a bench case's Plant and a replay's Spin come from its
//     caller);
//   - kernels (any kernels/...) imports nothing of runner;
//   - reports imports nothing of runner (what an evaluation records is
//     eval's and store's vocabulary).
//
// A second test keeps README.md in step with go.mod and the commands.
// The package has no code besides the tests.
package archtest
