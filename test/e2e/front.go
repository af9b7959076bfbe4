//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// front stands in for a Kubernetes Service before generator replicas (the hub runs them
// as processes, with no Service networking): each request goes to the next backend, round
// robin, among those whose /readyz answered 200 at the last probe, as the endpoints of a
// Service drop a pod that is not ready. A request in flight when its backend dies fails,
// as it would through a Service.
type front struct {
	URL      string
	backends []*url.URL
	ready    []atomic.Bool
	served   []atomic.Int64
	next     atomic.Uint64
	srv      *http.Server
}

// startFront serves on a loopback port until ctx ends, probing every interval.
func startFront(ctx context.Context, backends []string, interval time.Duration) (*front, error) {
	f := &front{ready: make([]atomic.Bool, len(backends)), served: make([]atomic.Int64, len(backends))}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return nil, err
		}
		f.backends = append(f.backends, u)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.URL = "http://" + l.Addr().String()
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		i := r.In.Context().Value(backendKey{}).(int)
		r.SetURL(f.backends[i])
		r.Out.Host = r.In.Host
	}}
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, ok := f.pick()
		if !ok {
			http.Error(w, `{"error":"no ready generator replica"}`, http.StatusServiceUnavailable)
			return
		}
		f.served[i].Add(1)
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), backendKey{}, i)))
	}), ReadHeaderTimeout: 10 * time.Second}
	f.probe(ctx)
	go func() { _ = f.srv.Serve(l) }()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				_ = f.srv.Close()
				return
			case <-t.C:
				f.probe(ctx)
			}
		}
	}()
	return f, nil
}

type backendKey struct{}

func (f *front) pick() (int, bool) {
	for range f.backends {
		i := int(f.next.Add(1) % uint64(len(f.backends)))
		if f.ready[i].Load() {
			return i, true
		}
	}
	return 0, false
}

func (f *front) probe(ctx context.Context) {
	for i, b := range f.backends {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		req, _ := http.NewRequestWithContext(pctx, http.MethodGet, b.String()+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		f.ready[i].Store(err == nil && resp.StatusCode == http.StatusOK)
		if err == nil {
			resp.Body.Close()
		}
		cancel()
	}
}
