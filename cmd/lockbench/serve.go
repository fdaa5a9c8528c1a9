package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/report"
)

func newServeCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve [DIR]",
		Short: "Serve the results tree (default results) and its reports on a loopback address",
		Long: "Serves the results tree (default results) on a loopback address: an index of its matrices and runs, each run's report,\n" +
			"and the comparison page lockbench compare --format html wrote in the tree's root, compare.html, when there is one.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root := "results"
			if len(args) == 1 {
				root = args[0]
			}
			if err := checkLoopback(listen); err != nil {
				return fail(exitUsage, err)
			}
			if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
				return fail(exitUsage, fmt.Errorf("%s is not a results directory", root))
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fail(exitHarness, fmt.Errorf("listen: %w", err))
			}
			srv := &http.Server{Handler: report.Handler(root), ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shut)
			}()
			fmt.Printf("serving %s on http://%s/ (Ctrl-C to stop)\n", root, ln.Addr())
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fail(exitHarness, fmt.Errorf("serve: %w", err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on; only loopback hosts are allowed")
	return cmd
}

// checkLoopback refuses addresses other machines could reach: the results
// hold the run's configuration and logs, and the server has no
// authentication.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q: serve only listens on a loopback address such as 127.0.0.1 or [::1]", addr)
}
