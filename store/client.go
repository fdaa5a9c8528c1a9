package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrRejected is a request the store refused (a stale fencing token, a
// version that moved on): it certainly had no effect.
var ErrRejected = errors.New("rejected")

// Client talks to a store over HTTP.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client for the store at addr (host:port). Every request
// is bounded by timeout; a timed-out request has an unknown outcome.
func NewClient(addr string, timeout time.Duration) *Client {
	return &Client{
		base: "http://" + addr,
		http: &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
	}
}

// Read returns the key's value, set and version.
func (c *Client) Read(ctx context.Context, r Request) (Response, error) {
	return c.do(ctx, "/read", r)
}

// Write stores r.Value.
func (c *Client) Write(ctx context.Context, r Request) error {
	_, err := c.do(ctx, "/write", r)
	return err
}

// Healthy reports whether the store answers.
func (c *Client) Healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+HealthPath, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("store health: %s", resp.Status)
	}
	return nil
}

func (c *Client) do(ctx context.Context, path string, r Request) (Response, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return Response{}, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("store request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("store %s: %w", path, err)
	}
	defer resp.Body.Close()
	var out Response
	switch resp.StatusCode {
	case http.StatusOK, http.StatusConflict:
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return Response{}, fmt.Errorf("store %s: decode answer: %w", path, err)
		}
	default:
		return Response{}, fmt.Errorf("store %s: %s", path, resp.Status)
	}
	if out.Outcome == Rejected {
		return out, fmt.Errorf("%w: %s", ErrRejected, out.Reason)
	}
	return out, nil
}
