// Package archtest holds the test of gradtune's import rules, checked on
// the non-test imports of each package, transitively (go list -deps):
//
//   - variants imports nothing of kernels (any kernels/...);
//   - configs imports the standard library and contract and dtype only,
//     which import the standard library only (dtype) or it and dtype
//     (contract): what a trainer embeds depends on nothing else, and it
//     builds with CGO_ENABLED=0 (checked, with launch and
//     examples/trainer, by TestTrainerPackagesBuildWithoutCgo);
//   - store imports neither runner nor kernels (any of their packages);
//   - runner (any runner/...) does not import store;
//   - kernels (any kernels/...) imports nothing of runner.
//
// A second test keeps README.md in step with go.mod and the commands.
// The package has no code besides the tests.
package archtest
