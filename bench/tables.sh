# shellcheck shell=bash
# Sourced by the device scripts: H200_TABLES is every committed H200 table
# (configs/h200/*.json), comma-separated as tune bench --configs takes
# them: the nightly command's list, derived so that a new table joins it.
H200_TABLES=$(printf '%s\n' configs/h200/*.json | paste -sd, -)
