// Package deploy holds no code: its directory holds the files that run a
// sharded tune on a cluster, and this package's tests check them.
//
//   - slurm/tune-array.sbatch: a Slurm job array, one shard of the tune per
//     task and one GPU each, every shard into its own database
//     (shard-<task id>.db) and a mark (shard-<task id>.done) when tune
//     succeeds; slurm/merge.sbatch checks every shard's mark, merges the
//     shards with `tune merge` and exports the config table with
//     `tune export`.
//   - kubernetes/tune-indexed-job.yaml: the same as an Indexed Job (and the
//     ReadWriteMany PersistentVolumeClaim its pods share at /data);
//     kubernetes/merge-job.yaml: the merge and export as a second Job.
//
// README.md in this directory explains how the shards partition the work,
// resuming a shard and using the merged table.
//
// The tests need neither a GPU nor a network nor tune: they parse the
// manifests (sigs.k8s.io/yaml, strictly, so a misspelt field fails) and
// check them field by field against each other, check the #SBATCH
// directives against the scripts' own comments and defaults, syntax-check
// the scripts with bash -n, and run both scripts with a stub in place of
// tune, under the environment Slurm gives each array task, to see the
// command lines they would run.
package deploy
