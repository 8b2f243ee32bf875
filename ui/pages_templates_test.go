package ui

import (
	"html/template"
	"testing"
	"time"
)

// Page templates are parsed on first use (pages.template): every page file
// must parse with the layout and the partials, and names that are not a
// page are refused rather than parsed.
func TestTemplatesParse(t *testing.T) {
	p := &pages{h: &handler{opts: Options{Now: time.Now}}, tmpl: map[string]*template.Template{}, static: map[string]staticFile{}}
	names, err := pageNames()
	if err != nil || len(names) < 10 {
		t.Fatalf("page templates: %v %v", names, err)
	}
	for _, n := range names {
		tp, err := p.template(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if tp.Lookup("layout") == nil || tp.Lookup("content") == nil {
			t.Errorf("%s: no layout or content template", n)
		}
		if again, _ := p.template(n); again != tp {
			t.Errorf("%s: parsed twice", n)
		}
	}
	for _, n := range []string{"layout", "partials", "nope", "../embed"} {
		if _, err := p.template(n); err == nil {
			t.Errorf("template(%q) parsed; want an error", n)
		}
	}
}
