package runner

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd when the process that started
// it dies (PR_SET_PDEATHSIG), even by SIGKILL.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
