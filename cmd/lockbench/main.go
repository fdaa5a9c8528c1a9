// Command lockbench runs fault-injection tests against distributed locks and
// judges the histories they leave.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/verdict"
)

// Exit codes, as Jepsen's.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitUsage   = 254
	exitHarness = 255
)

// exitError carries the exit code a command chose. Errors without one come
// from cobra's own parsing: bad arguments.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func fail(code int, err error) error { return &exitError{code: code, err: err} }

// exitCode ends a command without a message: the verdict was printed.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "lockbench: internal error: %v\n", p)
			code = exitHarness
		}
	}()
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	var ec exitCode
	var ee *exitError
	switch {
	case err == nil:
		return exitValid
	case errors.As(err, &ec):
		return int(ec)
	case errors.As(err, &ee):
		fmt.Fprintf(os.Stderr, "lockbench: %v\n", ee.err)
		return ee.code
	default:
		fmt.Fprintf(os.Stderr, "lockbench: %v (see lockbench --help)\n", err)
		return exitUsage
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "lockbench",
		Short:         "Fault-injection tests for distributed locks, judged from their histories",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       verdict.Version(),
	}
	root.AddCommand(newRunCmd(), newMatrixCmd(), newCheckCmd(), newImportCmd(), newCompareCmd(), newVersionCmd(), newExportCmd(), newComposeCmd(), newCleanCmd(), newImagesCmd(), newServeCmd(),
		newWorkerCmd(), newStoreCmd(), newHealthCmd(), newEtcdCmd(), newEtcdHealthCmd(), newEtcdLogCmd(), newRawLockCmd(), newClockOffsetCmd(), newPowerFSCmd(), newPowerCmd(), newLinkCmd())
	return root
}
