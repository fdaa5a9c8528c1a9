package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdmain"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/store"
)

// newEtcdCmd runs the real etcd server, built into this binary so that the
// node image needs no etcd download: `go install` of etcd's server module is
// refused, and a main that calls etcdmain.Main is etcd's own entry point.
func newEtcdCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "etcd [etcd flags]",
		Short:              "Run the etcd server (etcd's own flags follow)",
		Hidden:             true,
		DisableFlagParsing: true,
		Run: func(_ *cobra.Command, args []string) {
			etcdmain.Main(append([]string{"etcd"}, args...))
		},
	}
}

// withEtcd runs fn with a client of the cluster at endpoints and a context
// bounded by timeout; an error of either becomes the command's.
func withEtcd(endpoints string, timeout time.Duration, fn func(context.Context, *clientv3.Client) error) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 2 * time.Second})
	if err != nil {
		return fail(exitHarness, fmt.Errorf("etcd client: %w", err))
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := fn(ctx, cli); err != nil {
		return fail(exitHarness, err)
	}
	return nil
}

// newEtcdHealthCmd exits 0 once every member is listed and all of them
// report the same leader.
func newEtcdHealthCmd() *cobra.Command {
	var endpoints string
	var leaderOnly bool
	cmd := &cobra.Command{
		Use:    "etcd-health",
		Short:  "Exit 0 when the etcd cluster has all its members and a leader",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return withEtcd(endpoints, 3*time.Second, func(ctx context.Context, cli *clientv3.Client) error {
				eps := strings.Split(endpoints, ",")
				members, err := cli.MemberList(ctx)
				if err != nil {
					return fmt.Errorf("member list: %w", err)
				}
				if !leaderOnly && len(members.Members) != len(eps) {
					return fmt.Errorf("%d members, want %d", len(members.Members), len(eps))
				}
				var leader uint64
				for _, ep := range eps {
					st, err := cli.Status(ctx, ep)
					if err != nil {
						return fmt.Errorf("status of %s: %w", ep, err)
					}
					if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
						return fmt.Errorf("%s sees leader %x, others %x", ep, st.Leader, leader)
					}
					leader = st.Leader
				}
				name := fmt.Sprintf("%x", leader)
				for _, m := range members.Members {
					if m.ID == leader {
						name = m.Name
					}
				}
				if leaderOnly {
					fmt.Println(name)
					return nil
				}
				fmt.Printf("%d members, leader %s\n", len(eps), name)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&endpoints, "endpoints", "e1:2379,e2:2379,e3:2379", "client URLs, comma separated")
	cmd.Flags().BoolVar(&leaderOnly, "leader", false, "print only the leader's name")
	return cmd
}

// newEtcdLogCmd prints the revision history of the counter kept in etcd as
// a store log.
func newEtcdLogCmd() *cobra.Command {
	var endpoints, key string
	cmd := &cobra.Command{
		Use:    "etcd-log",
		Short:  "Print the counter's etcd revision history as store log lines",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return withEtcd(endpoints, 30*time.Second, func(ctx context.Context, cli *clientv3.Client) error {
				entries, err := store.NewEtcd(cli, backends.EtcdDataPrefix, 0, nil).Log(ctx, key)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(os.Stdout)
				for _, e := range entries {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&endpoints, "endpoints", "e1:2379,e2:2379,e3:2379", "client URLs, comma separated")
	cmd.Flags().StringVar(&key, "key", "x", "the counter's key")
	return cmd
}
