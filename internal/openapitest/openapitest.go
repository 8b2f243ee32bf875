// Package openapitest checks real HTTP answers against the OpenAPI document
// the server serves (GET /api/openapi.json, embedded from embed/openapi.json),
// with kin-openapi: a handler wrapper for the ui tests and a client transport
// for the e2e tests, so every answer those suites get is checked and the
// document cannot drift from the server. Only tests import it: kin-openapi
// never reaches the binary (a test in ui checks that).
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	assets "github.com/queuehq/queue/embed"
)

// Checker validates answers against one document.
type Checker struct {
	Doc    *openapi3.T
	router routers.Router
}

// New loads and validates the document raw (OpenAPI 3.1, JSON) and builds
// the router that finds the operation of a request.
func New(raw []byte) (*Checker, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	return &Checker{Doc: doc, router: router}, nil
}

// Default returns the Checker of the embedded document, loaded once.
var Default = sync.OnceValues(func() (*Checker, error) { return New(assets.OpenAPI) })

// ErrNoRoute is Check's answer for a request to a path or method the
// document does not have: the server answers those 404 or 405 by its
// router, and the test that compares the router with the document
// (ui's TestOpenAPIRoutes) is what keeps every served route in it.
var ErrNoRoute = errors.New("no operation of the OpenAPI document matches the request")

// Operation names the operation of the document that req goes to, as
// "METHOD /path/{param}", or fails with ErrNoRoute.
func (c *Checker) Operation(req *http.Request) (string, error) {
	route, _, err := c.router.FindRoute(req)
	if err != nil {
		return "", ErrNoRoute
	}
	return route.Method + " " + route.Path, nil
}

// Check validates one answer to req: its status must be documented for the
// operation, and its documented headers and its body (for a media type with
// a schema) must match. HEAD answers are not checked (kin-openapi skips
// them: they have no body).
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
			return ErrNoRoute
		}
		return err
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s answered %d (%s), which %s %s of the OpenAPI document does not allow: %w\nbody: %s",
			req.Method, req.URL.RequestURI(), status, header.Get("Content-Type"), route.Method, route.Path, err, clip(body))
	}
	return nil
}

// checkBody reports whether an answer of this Content-Type has a body to
// check: JSON. Event streams, pages, metrics and files are checked by
// status and Content-Type only (the document gives them no schema), so
// they are never read whole.
func checkBody(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// Handler wraps h so that every answer it gives is checked against the
// embedded document once the handler returns; a mismatch fails t (the test
// that built the server, and so made the request). Requests the document
// has no operation for are let through unchecked (see ErrNoRoute).
func Handler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request as it came (the handler may read its body and change
		// its headers): what the router matches is method and path.
		probe := &http.Request{Method: r.Method, URL: r.URL, Host: r.Host, Header: r.Header.Clone()}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if !rec.wrote {
			if r.Context().Err() != nil {
				return // the client hung up before any answer
			}
			rec.status, rec.header = http.StatusOK, w.Header().Clone()
		}
		if err := c.Check(probe, rec.status, rec.header, rec.body.Bytes()); err != nil && !errors.Is(err, ErrNoRoute) {
			t.Errorf("OpenAPI: %v", err)
		}
	})
}

// maxRecorded bounds the body a recorder keeps for the check; a longer
// JSON body is beyond what any test sends (a 10,000-job batch is ~7 MiB).
const maxRecorded = 64 << 20

// recorder passes an answer through and keeps its status, headers and (for
// JSON) body. It flushes and unwraps, so event streams and
// http.ResponseController work through it.
type recorder struct {
	http.ResponseWriter
	wrote   bool
	sniffed bool // the first write was seen
	keep    bool
	status  int
	header  http.Header
	body    bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.wrote, r.status, r.header = true, status, r.ResponseWriter.Header().Clone()
		r.keep = checkBody(r.header.Get("Content-Type"))
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	if !r.sniffed && len(b) > 0 {
		r.sniffed = true
		if _, set := r.header["Content-Type"]; !set { // net/http sends what it sniffs of the first write
			r.header.Set("Content-Type", http.DetectContentType(b))
			r.keep = checkBody(r.header.Get("Content-Type"))
		}
	}
	if r.keep && r.body.Len()+len(b) <= maxRecorded {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (r *recorder) Flush() {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Transport is an http.RoundTripper that checks every answer it carries
// against the embedded document: a JSON body is read whole, checked and
// handed on; other answers are checked by status and headers as they
// arrive (an event stream stays a stream). A mismatch is given to fail
// with the request; a failure to load the document too, once per request.
type Transport struct {
	Base http.RoundTripper // if nil, http.DefaultTransport
	// Only, if set, picks the requests to check (those to the servers
	// under test); the others pass through untouched.
	Only func(req *http.Request) bool
	Fail func(req *http.Request, err error)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	probe := &http.Request{Method: req.Method, URL: req.URL, Host: req.Host, Header: req.Header.Clone()}
	if t.Only != nil && !t.Only(req) {
		return base.RoundTrip(req)
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	c, err := Default()
	if err != nil {
		t.Fail(req, err)
		return resp, nil
	}
	var body []byte
	if req.Method != http.MethodHead && checkBody(resp.Header.Get("Content-Type")) {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil { // the caller gets what came and then the same error
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			return resp, nil
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := c.Check(probe, resp.StatusCode, resp.Header, body); err != nil && !errors.Is(err, ErrNoRoute) {
		t.Fail(req, err)
	}
	return resp, nil
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
