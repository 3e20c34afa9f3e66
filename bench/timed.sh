# shellcheck shell=bash
# Sourced by the device scripts: timed runs a command, prints its seconds
# and exit code, and stops it with SIGINT (tune keeps what it measured)
# when the call's deadline comes. DEADLINE is an absolute time in epoch
# seconds (session_h200.sh sets it from BUDGET); unset, nothing is stopped.
# RESERVE seconds before the deadline are kept for the steps that follow
# (show, export, the ratio tables).
timed() {
	local s rc left
	s=$(date +%s)
	if [[ -n ${DEADLINE:-} ]]; then
		left=$((DEADLINE - s - ${RESERVE:-30}))
		if ((left < 10)); then
			echo "[skipped: ${left} s left] ${*:1:4}"
			return 124
		fi
		timeout -s INT -k 20 "$left" "$@"
	else
		"$@"
	fi
	rc=$?
	echo "[$(($(date +%s) - s)) s, exit $rc] ${*:1:4}"
	return $rc
}
