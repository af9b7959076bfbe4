package generator

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source yields repo snapshots.
type Source interface {
	// Snapshot is the snapshot to answer from, or an error saying why there
	// is none that can be trusted (never loaded, repo unreachable too long).
	Snapshot() (*Snapshot, error)
	// Status describes the last fetch and load.
	Status() SourceStatus
	// Refresh fetches and loads the repo head now.
	Refresh(ctx context.Context) (SourceStatus, error)
	// Current is the snapshot of the repo head as of the call: replicas
	// behind one Service answer from the same commit, or an error (a
	// replica that lags must not answer a shorter list than one that does
	// not).
	Current(ctx context.Context) (*Snapshot, error)
}

// SourceStatus is what /api/v1/placements and /api/v1/refresh report about the repo.
type SourceStatus struct {
	// Commit of the served snapshot ("" before the first one).
	Commit   string    `json:"commit"`
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// ConfirmedAt: when the served snapshot was last found to be the head.
	ConfirmedAt time.Time `json:"confirmedAt,omitzero"`
	// Head is the last commit fetched; HeadError says why it is not served.
	Head       string   `json:"head,omitempty"`
	HeadError  string   `json:"headError,omitempty"`
	HeadErrors []string `json:"headErrors,omitempty"`
	// FetchError is the last fetch's failure, LastFetch when it succeeded last.
	FetchError string    `json:"fetchError,omitempty"`
	LastFetch  time.Time `json:"lastFetch,omitzero"`
}

// Config configures a Server.
type Config struct {
	// TokenFile holds the bearer token Argo CD sends (re-read when it changes).
	TokenFile string
	// MaxBodyBytes bounds request bodies; default 64 KiB.
	MaxBodyBytes int64
	Log          *slog.Logger
	// Inventory, if set, is reported in /api/v1/placements and /metrics.
	Inventory *Inventory
}

// Server is the generator's HTTP API.
type Server struct {
	cfg   Config
	src   Source
	hub   Hub
	m     *metrics
	echo  *echo.Echo
	token tokenFile
	log   *slog.Logger

	// placed is the Placement of the latest inputs (Placement.newer; stored
	// under placeMu); placing the one being computed.
	placed   atomic.Pointer[Placement]
	placeMu  sync.Mutex
	placing  *placing
	recordMu sync.Mutex
	recorded *Placement         // the last one recorded (under recordMu)
	last     map[string]Outcome // zone -> outcome last logged (under recordMu)
}

// CommitHeader names the commit an answer was made from (Argo CD ignores it).
const CommitHeader = "X-Spokeforge-Commit"

// DefaultMaxBodyBytes: an Argo CD request is a few hundred bytes.
const DefaultMaxBodyBytes = 64 << 10

// GCPercent is the GC target the generator command runs at (GOGC in the
// environment wins). Nearly all of its allocation is snapshot loads and the
// answers built from them; requests are served from encoded bytes. At the
// default 100 the heap doubles past the ~115 MB a 10,000-cluster snapshot
// keeps while a load runs beside it: 25 keeps the peak resident set under
// 300 MiB there, for about a tenth more CPU per one-record commit
// (docs/benchmarks.md, issue 17).
const GCPercent = 25

// NewServer builds the API over src and hub. hub may be nil only if no
// zones are ever asked for; kind: zones then answers 503.
func NewServer(cfg Config, src Source, hub Hub) (*Server, error) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	s := &Server{cfg: cfg, src: src, hub: hub, log: cfg.Log, token: tokenFile{path: cfg.TokenFile}}
	if _, err := s.token.get(); err != nil {
		return nil, err
	}
	s.m = newMetrics(src, hub)
	if cfg.Inventory != nil {
		s.m.reg.MustRegister(cfg.Inventory.collectors()...)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.observe)
	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})))
	// Middleware per route, not per group: a group's catch-all would turn 405 into 404.
	e.POST("/api/v1/getparams.execute", s.getParams, s.limitBody, s.auth)
	e.GET("/api/v1/placements", s.placements, s.auth)
	e.POST("/api/v1/refresh", s.refresh, s.limitBody, s.webhookAuth)
	s.echo = e
	return s, nil
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Run serves on addr until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context, addr string) error {
	hs := &http.Server{Addr: addr, Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	s.log.Info("generator listening", "addr", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// The generator stops within 2 s of SIGTERM: in-flight answers get a
	// second, then connections are closed (the controller retries).
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return hs.Close()
	}
	return nil
}

// errorHandler answers every error as {"error": "..."}; Argo CD's client
// shows it as "API error with status code N: <error>".
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, err.Error()
	var he *HTTPError
	var ee *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status, msg = he.Status, he.Msg
	case errors.As(err, &ee):
		status, msg = ee.Code, fmt.Sprint(ee.Message)
	}
	_ = c.JSON(status, map[string]string{"error": msg})
}

// observe logs and counts every request; it never logs headers, so the
// token cannot reach a log.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			s.errorHandler(err, c)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		kind, _ := c.Get("kind").(string)
		code := c.Response().Status
		d := time.Since(start)
		s.m.requests.WithLabelValues(route, kind, strconv.Itoa(code)).Inc()
		s.m.latency.WithLabelValues(route, kind).Observe(d.Seconds())
		if route != "/healthz" && route != "/readyz" && route != "/metrics" {
			attrs := []any{"method", c.Request().Method, "path", c.Request().URL.Path, "status", code, "duration_ms", float64(d.Microseconds()) / 1000}
			if kind != "" {
				attrs = append(attrs, "kind", kind)
			}
			if v, ok := c.Get("appset").(string); ok && v != "" {
				attrs = append(attrs, "applicationSet", v)
			}
			if v, ok := c.Get("sets").(int); ok {
				attrs = append(attrs, "parameterSets", v)
			}
			if err != nil {
				attrs = append(attrs, "error", errMsg(err))
			}
			level := slog.LevelInfo
			if code >= 500 {
				level = slog.LevelWarn
			}
			s.log.Log(c.Request().Context(), level, "request", attrs...)
		}
		return nil
	}
}

func errMsg(err error) string {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Msg
	}
	return err.Error()
}

// limitBody refuses bodies over the limit with 413, whatever Content-Length says.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > s.cfg.MaxBodyBytes {
			return &HTTPError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body is %d bytes; the limit is %d", r.ContentLength, s.cfg.MaxBodyBytes)}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes)
		return next(c)
	}
}

func (s *Server) readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, &HTTPError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body exceeds the limit of %d bytes", s.cfg.MaxBodyBytes)}
	case err != nil:
		return nil, badRequest("reading body: %v", err)
	}
	return b, nil
}

// tokenFile reads the token from its file, again whenever the file
// changes (a rotated Kubernetes Secret volume).
type tokenFile struct {
	path  string
	mu    sync.Mutex
	mod   time.Time
	size  int64
	token []byte
}

func (t *tokenFile) get() ([]byte, error) {
	st, err := os.Stat(t.path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != nil && st.ModTime().Equal(t.mod) && st.Size() == t.size {
		return t.token, nil
	}
	b, err := os.ReadFile(t.path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	tok := []byte(strings.TrimSpace(string(b)))
	if len(tok) < 16 {
		return nil, fmt.Errorf("token file %s: the token must be at least 16 characters", t.path)
	}
	t.token, t.mod, t.size = tok, st.ModTime(), st.Size()
	return tok, nil
}

// tokenEqual compares in constant time; hashing first hides the length.
func tokenEqual(got, want []byte) bool {
	g, w := sha256.Sum256(got), sha256.Sum256(want)
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func (s *Server) checkBearer(c echo.Context) error {
	want, err := s.token.get()
	if err != nil {
		s.log.Error("cannot read the token file", "error", err.Error())
		return &HTTPError{Status: http.StatusInternalServerError, Msg: "the generator cannot read its token file"}
	}
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if h == "" {
		return &HTTPError{Status: http.StatusUnauthorized, Msg: "missing Authorization: Bearer <token> header"}
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return &HTTPError{Status: http.StatusUnauthorized, Msg: "Authorization header is not a bearer token"}
	}
	if !tokenEqual([]byte(strings.TrimSpace(tok)), want) {
		return &HTTPError{Status: http.StatusForbidden, Msg: "wrong token"}
	}
	return nil
}

func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.checkBearer(c); err != nil {
			return err
		}
		return next(c)
	}
}

// webhookAuth accepts the bearer token (Gitea, Forgejo, scripts), GitLab's
// X-Gitlab-Token, or GitHub's X-Hub-Signature-256 (HMAC-SHA256 of the body
// keyed with the token), so a git webhook can trigger a refresh.
func (s *Server) webhookAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		want, err := s.token.get()
		if err != nil {
			return s.checkBearer(c)
		}
		if gl := r.Header.Get("X-Gitlab-Token"); gl != "" {
			if !tokenEqual([]byte(gl), want) {
				return &HTTPError{Status: http.StatusForbidden, Msg: "wrong token"}
			}
			return next(c)
		}
		if sig := r.Header.Get("X-Hub-Signature-256"); sig != "" {
			body, err := s.readBody(c)
			if err != nil {
				return err
			}
			got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
			mac := hmac.New(sha256.New, want)
			mac.Write(body)
			if err != nil || !hmac.Equal(got, mac.Sum(nil)) {
				return &HTTPError{Status: http.StatusForbidden, Msg: "wrong X-Hub-Signature-256"}
			}
			return next(c)
		}
		return s.auth(next)(c)
	}
}

// readyz: ready once there is a snapshot and, with a hub, a full hub view.
func (s *Server) readyz(c echo.Context) error {
	if _, err := s.src.Snapshot(); err != nil {
		return &HTTPError{Status: http.StatusServiceUnavailable, Msg: err.Error()}
	}
	if s.hub != nil && !s.hub.Synced() {
		return &HTTPError{Status: http.StatusServiceUnavailable, Msg: "hub informers (cluster Secrets, Applications) not synced yet"}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// answerable returns the snapshot of the repo head, and checks the hub
// when kind needs it. Any doubt is a 503: Argo CD keeps existing
// Applications on an error.
func (s *Server) answerable(ctx context.Context, kind string) (*Snapshot, error) {
	snap, err := s.src.Current(ctx)
	if err != nil {
		return nil, &HTTPError{Status: http.StatusServiceUnavailable, Msg: "no trustworthy repo snapshot: " + err.Error()}
	}
	if kind == KindZones {
		if s.hub == nil {
			return nil, &HTTPError{Status: http.StatusServiceUnavailable, Msg: "kind zones needs the hub, and this generator runs without one"}
		}
		if err := s.hub.Ready(); err != nil {
			return nil, &HTTPError{Status: http.StatusServiceUnavailable, Msg: "hub state not trustworthy: " + err.Error()}
		}
	}
	return snap, nil
}

// placement is the Placement of snap under the hub's current state: the
// latest one while neither changed. Otherwise a request joins the
// computation in flight for snap, or starts one: on a hub that changes all
// the time, requests never queue behind more than one computation, and an
// answer reflects the hub as of at most one computation before it (the
// informers lag the API server by as much).
func (s *Server) placement(snap *Snapshot) *Placement {
	if p := s.placed.Load(); p != nil && p.Snapshot == snap && p.HubVersion == s.hub.Version() {
		return p
	}
	s.placeMu.Lock()
	if c := s.placing; c != nil && c.snap == snap {
		s.placeMu.Unlock()
		<-c.done
		return c.p
	}
	c := &placing{snap: snap, done: make(chan struct{})}
	s.placing = c
	s.placeMu.Unlock()
	c.p = Place(snap, s.hub)
	// Computations overlap when the snapshot or the hub changes during one:
	// the one that finishes last may have the older inputs, and must not
	// replace a newer Placement (nor its gauges and logs).
	s.placeMu.Lock()
	if c.p.newer(s.placed.Load()) {
		s.placed.Store(c.p)
	}
	if s.placing == c {
		s.placing = nil
	}
	s.placeMu.Unlock()
	close(c.done)
	s.record(c.p)
	return c.p
}

// placing is a Placement being computed.
type placing struct {
	snap *Snapshot
	done chan struct{}
	p    *Placement
}

func (s *Server) getParams(c echo.Context) error {
	if ct := c.Request().Header.Get(echo.HeaderContentType); !isJSON(ct) {
		return &HTTPError{Status: http.StatusUnsupportedMediaType, Msg: fmt.Sprintf("Content-Type %q: want application/json", ct)}
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	q, err := DecodeRequest(body)
	c.Set("appset", q.AppSet)
	if err != nil {
		return err
	}
	c.Set("kind", q.Kind)
	snap, err := s.answerable(c.Request().Context(), q.Kind)
	if err != nil {
		return err
	}
	var answer []byte
	var sets int
	switch q.Kind {
	case KindClusters:
		answer, sets = snap.clustersAnswer, len(snap.clusterSets)
	case KindZones:
		answer, sets = s.placement(snap).Answer(q.Zones)
	}
	c.Set("sets", sets)
	if q.Zones == (Filter{}) {
		s.m.sets.WithLabelValues(q.Kind).Set(float64(sets))
	}
	c.Response().Header().Set(CommitHeader, snap.Commit)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, answer)
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == echo.MIMEApplicationJSON
}

// Placements is the body of GET /api/v1/placements.
type Placements struct {
	Repo     SourceStatus    `json:"repo"`
	Counts   map[Outcome]int `json:"counts"`
	Clusters int             `json:"clusters"`
	Zones    []Decision      `json:"zones"`
	// Inventory is the ClusterProfile status writer's state, when it runs.
	Inventory *InventoryReport `json:"inventory,omitempty"`
}

func (s *Server) placements(c echo.Context) error {
	snap, err := s.answerable(c.Request().Context(), KindZones)
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) {
			he.Msg += fmt.Sprintf(" (repo: %s)", statusLine(s.src.Status()))
		}
		return err
	}
	f := Filter{Org: c.QueryParam("org"), Product: c.QueryParam("product"), Environment: c.QueryParam("environment")}
	ds := s.placement(snap).Decisions(f, true)
	p := Placements{Repo: s.src.Status(), Counts: map[Outcome]int{}, Zones: ds}
	p.Clusters, _, _ = snap.Counts()
	if s.cfg.Inventory != nil {
		r := s.cfg.Inventory.Report()
		p.Inventory = &r
	}
	for _, o := range Outcomes {
		p.Counts[o] = 0
	}
	for _, d := range ds {
		p.Counts[d.Outcome]++
	}
	if p.Zones == nil {
		p.Zones = []Decision{}
	}
	c.Response().Header().Set(CommitHeader, snap.Commit)
	return c.JSON(http.StatusOK, p)
}

// record sets the decision gauges from every zone's decision in p and logs
// each that changed since it was last logged, unless a Placement of newer
// inputs was recorded already.
func (s *Server) record(p *Placement) {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	if !p.newer(s.recorded) {
		return
	}
	s.recorded = p
	ds := p.Decisions(Filter{}, false)
	s.m.observeDecisions(ds)
	prev := s.last
	// A new map also forgets zones git removed.
	s.last = make(map[string]Outcome, len(ds))
	for _, d := range ds {
		o, ok := prev[d.Zone]
		s.last[d.Zone] = d.Outcome
		if ok && o == d.Outcome {
			continue
		}
		d.explain()
		s.log.Info("zone decision", "zone", d.Zone, "org", d.Org, "product", d.Product, "cluster", d.Cluster,
			"outcome", string(d.Outcome), "reason", d.Reason)
	}
}

func statusLine(st SourceStatus) string {
	switch {
	case st.FetchError != "":
		return "last fetch failed: " + st.FetchError
	case st.HeadError != "":
		return fmt.Sprintf("head %s is invalid: %s", st.Head, st.HeadError)
	case st.Commit == "":
		return "no snapshot yet"
	}
	return "serving " + st.Commit
}

func (s *Server) refresh(c echo.Context) error {
	st, err := s.src.Refresh(c.Request().Context())
	if err != nil {
		return &HTTPError{Status: http.StatusBadGateway, Msg: "refresh failed: " + err.Error()}
	}
	return c.JSON(http.StatusOK, st)
}
