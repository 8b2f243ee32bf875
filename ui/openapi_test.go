package ui

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	assets "github.com/queuehq/queue/embed"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
)

var updateOpenAPI = flag.Bool("update", false, "rewrite embed/openapi.json from the route table of openapi_*_test.go")

// openapiJSON is the document as embed/openapi.json holds it: indented,
// keys sorted, HTML characters unescaped, a final newline.
func openapiJSON(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(openapiDoc()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The embedded document is the one the route table makes; -update writes it.
func TestOpenAPIDocument(t *testing.T) {
	got := openapiJSON(t)
	if *updateOpenAPI {
		if err := os.WriteFile("../embed/openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, assets.OpenAPI) {
		t.Fatal("embed/openapi.json is not what ui/openapi_*_test.go make: run `go test ./ui -run OpenAPI -update` and review the diff")
	}
	if _, err := openapitest.New(got); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(got, []byte(openapiVersion)); n != 1 {
		t.Fatalf("the document holds %s %d times; GET /api/openapi.json replaces it once, in info", openapiVersion, n)
	}
}

// docOperations lists "METHOD /path" of every operation of the document.
func docOperations(t testing.TB, raw []byte) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for p, item := range doc.Paths {
		for m := range item {
			switch m {
			case "get", "head", "post", "put", "patch", "delete", "options", "trace":
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Every route the router serves is in the document, and the document has
// no route the router does not serve. This failing is how a new route
// without its entry in openapi_routes_test.go fails the build.
func TestOpenAPIRoutes(t *testing.T) {
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.NewFakeClock(time.Now()), app.NewBus(), zerolog.Nop())
	h := New(Options{Service: svc, Metrics: http.NotFoundHandler(), Scheduler: &app.Scheduler{Service: svc}})
	var served []string
	for _, r := range Routes(h) {
		served = append(served, r.Method+" "+oaPath(r.Path))
	}
	sort.Strings(served)
	served = slices.Compact(served)
	documented := docOperations(t, assets.OpenAPI)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in the OpenAPI document: add it to oaAPIRoutes or oaPageRoutes (ui/openapi_*_test.go) and run `go test ./ui -run OpenAPI -update`", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(served, d) {
			t.Errorf("%s is in the OpenAPI document but the router does not serve it", d)
		}
	}
}

// GET /api/openapi.json answers the embedded document with the server's
// version, as JSON, to any token (and, like every /api/ route, to none
// only without tokens).
func TestOpenAPIServed(t *testing.T) {
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.NewFakeClock(time.Now()), app.NewBus(), zerolog.Nop())
	tokens := []Token{{Name: "reader", Secret: "reader-token-0123456789", Role: RoleRead}, {Name: "one-queue", Secret: "queue-token-0123456789", Role: RoleWork, Queues: []string{"emails"}}}
	srv := httptest.NewServer(openapitest.Handler(t, New(Options{Service: svc, Tokens: tokens, Version: "v1.2.3", Log: zerolog.Nop()})))
	defer srv.Close()
	get := func(token string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/openapi.json", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp, b.Bytes()
	}
	if resp, _ := get(""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401", resp.StatusCode)
	}
	for _, tok := range []string{"reader-token-0123456789", "queue-token-0123456789"} {
		resp, body := get(tok)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		want := bytes.Replace(assets.OpenAPI, []byte(openapiVersion), []byte(`"version": "v1.2.3"`), 1)
		if !bytes.Equal(body, want) {
			t.Fatal("the answer is not the embedded document with the server's version")
		}
		var doc struct {
			OpenAPI string `json:"openapi"`
			Info    struct {
				Version string `json:"version"`
			} `json:"info"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || doc.OpenAPI != "3.1.0" || doc.Info.Version != "v1.2.3" {
			t.Fatalf("openapi %q, info.version %q, %v", doc.OpenAPI, doc.Info.Version, err)
		}
	}
	if got := openapiDocument(""); !bytes.Equal(got, assets.OpenAPI) {
		t.Fatal("without a version the document is served as embedded")
	}
}

// jsonNames are the JSON names of what encoding/json writes for a value of
// type t: its exported fields (embedded structs flattened), tags applied.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonNames(ft)...)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// schemaNames are the properties of schema name (through allOf).
func schemaNames(t *testing.T, schemas S, name string) []string {
	t.Helper()
	s, ok := schemas[name].(S)
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	var out []string
	var walk func(S)
	walk = func(s S) {
		if r, ok := s["$ref"].(string); ok {
			walk(schemas[strings.TrimPrefix(r, "#/components/schemas/")].(S))
		}
		props, _ := s["properties"].(S)
		for p := range props {
			out = append(out, p)
		}
		if all, ok := s["allOf"].([]any); ok {
			for _, a := range all {
				walk(a.(S))
			}
		}
	}
	walk(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// Each schema lists every field its Go type writes (and no other): a field
// added to a type and not to its schema fails here, since the answer
// checks let unknown properties through (answers may grow).
func TestOpenAPIFields(t *testing.T) {
	schemas := openapiSchemas()
	for name, v := range map[string]any{
		"Job": app.Job{}, "DeadJob": app.DeadJob{}, "AttemptError": app.AttemptError{}, "DeadLetterInfo": app.DeadLetterInfo{},
		"Parent": app.Parent{}, "Event": app.Event{}, "SubmitInput": app.SubmitInput{}, "UniqueRule": app.UniqueRule{},
		"JobPage": app.JobPage{}, "DeadPage": app.DeadPage{}, "ClaimInput": app.ClaimInput{}, "QueueConfig": app.QueueConfig{},
		"QueueInfo": app.QueueInfo{}, "QueueStats": app.QueueStats{}, "UnclaimedKind": app.UnclaimedKind{}, "Stats": statsBody{},
		"Series": app.Series{}, "DeadStats": app.DeadStats{}, "ReplayInput": app.ReplayInput{}, "BulkInput": app.BulkInput{},
		"BulkResult": app.BulkResult{}, "LiveBulkInput": app.LiveBulkInput{}, "LiveBulkResult": app.LiveBulkResult{},
		"AuditEntry": app.AuditEntry{}, "Workflow": app.Workflow{}, "WorkflowStep": app.WorkflowStep{}, "Dependency": app.Dependency{},
		"WorkflowView": app.WorkflowView{}, "WorkflowPage": app.WorkflowPage{}, "StepInput": app.StepInput{}, "WorkflowInput": app.WorkflowInput{},
		"PeriodicStatus": app.PeriodicStatus{}, "PeriodicInput": app.PeriodicInput{}, "QueueSettings": app.QueueSettingsView{},
		"QueueSettingValues": app.QueueSettings{}, "QueueSettingsPatch": app.QueueSettings{}, "OnceRecord": app.OnceRecord{},
		"Worker": app.Worker{}, "WorkerInput": app.WorkerInput{}, "JobLog": app.JobLog{}, "LogLine": app.LogLine{},
		"KeyCount": app.KeyCount{}, "ErrorBody": apiError{},
		"Webhook": app.WebhookSubscription{}, "WebhookInput": app.WebhookInput{}, "WebhookDeliveries": app.WebhookDeliveryPage{},
	} {
		want := jsonNames(reflect.TypeOf(v))
		got := schemaNames(t, schemas, name)
		// What a MarshalJSON adds, or a schema leaves out on purpose.
		switch name {
		case "DeadJob":
			want = append(want, "status")
		case "StepInput":
			want = slices.DeleteFunc(want, func(s string) bool { return s == "idempotency_key" })
		case "Series":
			want = append(want, "points") // SeriesPoint's fields are checked below
		case "Webhook":
			want = append(want, "secret_set") // in the secret's place (MarshalJSON)
		}
		sort.Strings(want)
		want = slices.Compact(want)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s has %v; its Go type writes %v", name, got, want)
		}
	}
	// Objects written inline in their parent's schema.
	for _, c := range []struct {
		schema, list string
		v            any
	}{{"Series", "points", app.SeriesPoint{}}, {"WebhookDeliveries", "deliveries", app.WebhookDeliveryInfo{}}} {
		items := schemas[c.schema].(S)["properties"].(S)[c.list].(S)["items"].(S)
		var got []string
		for p := range items["properties"].(S) {
			got = append(got, p)
		}
		sort.Strings(got)
		if want := jsonNames(reflect.TypeOf(c.v)); !slices.Equal(got, want) {
			t.Errorf("%s.%s has %v; %T writes %v", c.schema, c.list, got, c.v, want)
		}
	}
}

// kin-openapi is a test dependency: the binary does not link it.
func TestOpenAPINotInBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/queuehq/queue").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/getkin/") || strings.HasSuffix(dep, "/internal/openapitest") {
			t.Errorf("the binary links %s", dep)
		}
	}
}
