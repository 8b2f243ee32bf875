package ui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queuehq/queue/ui"
)

// TestBrowserAccessibility runs axe-core (WCAG 2.1 A and AA, any
// violation fails) on every page of the console in the light theme, the
// dark one the OS asks for, and the dark one chosen with the header's
// toggle; checks that a light choice wins over a dark OS, that the skip
// link is the first tab stop, that tables turn into labelled cards on a
// narrow screen, and that buttons which act on ticked rows wait for a tick.
func TestBrowserAccessibility(t *testing.T) {
	browser := newBrowser(t)
	if axeSource() == "" {
		t.Skip("axe-core is not installed (npm install -g axe-core)")
	}
	env := newUIEnv(t, ui.Options{}, false)
	tb := newTab(t, browser, env.URL, true)
	pages := consolePages(env)

	// walk checks every page: all of WCAG 2.1 A and AA in the light
	// theme, the colour rules in a dark one (the rest does not change
	// with the theme).
	walk := func(theme string, check func(*tab, string)) {
		for _, p := range pages {
			if st := tb.openStatus(p); st != http.StatusOK {
				tb.t.Errorf("%s: status %d, want 200", p, st)
				continue
			}
			check(tb, theme+" "+p)
		}
	}
	t.Run("Light", func(t *testing.T) {
		tb.t = t
		tb.colorScheme("light")
		walk("light", (*tab).axe)
	})
	t.Run("DarkOS", func(t *testing.T) {
		tb.t = t
		tb.colorScheme("dark")
		walk("dark (OS)", (*tab).axeColours)
		if bg := eval[string](tb, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(15, 19, 26)" {
			t.Errorf("with a dark OS the page's background is %s, want the dark palette's rgb(15, 19, 26)", bg)
		}
	})
	t.Run("DarkToggle", func(t *testing.T) {
		tb.t = t
		tb.colorScheme("light")
		tb.open("/")
		choose(tb, "[data-pref-theme]", "dark")
		if th := eval[string](tb, `document.documentElement.dataset.theme || ""`); th != "dark" {
			t.Fatalf("after choosing dark, <html data-theme> is %q", th)
		}
		// The palettes are one (TestDarkPalettesAgree): a few pages show the
		// choice holds from page to page, loaded from localStorage before
		// the first paint (theme.js).
		all := pages
		pages = []string{"/", "/jobs", fmt.Sprintf("/jobs/%d", env.ids.Done), "/dlq", "/queues"}
		walk("dark (toggle)", (*tab).axeColours)
		pages = all
		if bg := eval[string](tb, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(15, 19, 26)" {
			t.Errorf("with dark chosen on a light OS the page's background is %s, want the dark palette's rgb(15, 19, 26)", bg)
		}
	})
	t.Run("LightWinsOverDarkOS", func(t *testing.T) {
		tb.t = t
		tb.colorScheme("dark")
		tb.open("/jobs")
		choose(tb, "[data-pref-theme]", "light")
		tb.open("/jobs")
		if bg := eval[string](tb, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(245, 246, 248)" {
			t.Errorf("with light chosen on a dark OS the page's background is %s, want the light palette's rgb(245, 246, 248)", bg)
		}
		tb.axe("light (toggle, dark OS) /jobs")
		choose(tb, "[data-pref-theme]", "")
		if th := eval[bool](tb, `document.documentElement.hasAttribute("data-theme")`); th {
			t.Error("after choosing System, <html> still has a data-theme")
		}
		tb.colorScheme("light")
	})
	t.Run("SkipLink", func(t *testing.T) {
		tb.t = t
		tb.open("/jobs")
		if n := tb.count(`nav.nav a[href="/audit"]`); n != 1 {
			t.Errorf("the navigation has %d links to the audit trail, want 1 (for an admin)", n)
		}
		if !eval[bool](tb, `document.querySelector("a.skip").getBoundingClientRect().bottom <= 0`) {
			t.Error("the skip link shows before it has focus")
		}
		key(tb, "\t")
		if got := eval[string](tb, `document.activeElement.matches("a.skip[href='#main']") ? document.activeElement.textContent : document.activeElement.outerHTML.slice(0, 80)`); got != "Skip to content" {
			t.Fatalf("the first tab stop is %s, want the skip link", got)
		}
		if !eval[bool](tb, `(r => r.top >= 0 && r.height > 0)(document.activeElement.getBoundingClientRect())`) {
			t.Error("the focused skip link is not on screen")
		}
		key(tb, "\r")
		if _, ok := tb.waitFor(`document.activeElement.id === "main"`, 2*time.Second); !ok {
			t.Errorf("after following the skip link focus is on %s, want main", eval[string](tb, `document.activeElement.outerHTML.slice(0, 80)`))
		}
	})
	t.Run("CardsOnNarrowScreens", func(t *testing.T) {
		tb.t = t
		if err := chromedp.Do(tb.ctx, chromedp.EmulateViewport(400, 800)); err != nil {
			t.Fatal(err)
		}
		defer chromedp.Do(tb.ctx, chromedp.EmulateViewport(1366, 900))
		tb.open("/dlq")
		cells := eval[[]string](tb, `[...document.querySelector("table.table tbody tr").cells].map(td => getComputedStyle(td, "::before").content)`)
		if len(cells) < 3 || !strings.Contains(strings.Join(cells, " "), `"ID"`) {
			t.Errorf("on a 400 px screen the first row's cells are labelled %q, want their columns' names", cells)
		}
		if d := eval[string](tb, `getComputedStyle(document.querySelector("table.table tbody tr")).display`); d != "block" {
			t.Errorf("on a 400 px screen a row is display %s, want a card (block)", d)
		}
		tb.axe("400 px /dlq")
	})
	t.Run("NeedsSelection", func(t *testing.T) {
		tb.t = t
		for _, p := range []string{"/jobs", "/dlq"} {
			tb.open(p)
			if tb.count("[data-needs-selection]") == 0 { // /jobs' "Ticked rows", /dlq's "Selected"
				t.Errorf("%s has no buttons marked data-needs-selection", p)
				continue
			}
			if !eval[bool](tb, `[...document.querySelectorAll("[data-needs-selection]")].every(b => b.disabled)`) {
				t.Errorf("%s: with no row ticked a button marked data-needs-selection is enabled", p)
			}
			tb.click(`input[type=checkbox][name="id"]`)
			if !eval[bool](tb, `[...document.querySelectorAll("[data-needs-selection]")].every(b => !b.disabled)`) {
				t.Errorf("%s: with a row ticked a button marked data-needs-selection is still disabled", p)
			}
			tb.click(`input[type=checkbox][name="id"]`)
			if !eval[bool](tb, `[...document.querySelectorAll("[data-needs-selection]")].every(b => b.disabled)`) {
				t.Errorf("%s: after unticking the row a button marked data-needs-selection is enabled", p)
			}
		}
	})
	tb.t = t
	for _, p := range tb.problems() {
		t.Errorf("%s", p)
	}
}

// choose picks value in the select sel as a person would (a change event).
func choose(tb *tab, sel, value string) {
	tb.t.Helper()
	js := fmt.Sprintf(`(s => { s.value = %q; s.dispatchEvent(new Event("change", {bubbles: true})); return s.value === %q && !s.closest("[hidden]"); })(document.querySelector(%q))`, value, value, sel)
	if !eval[bool](tb, js) {
		tb.t.Fatalf("cannot choose %q in %s (hidden, or no such option)", value, sel)
	}
}

// key presses one key (a tab, a return) in the focused element.
func key(tb *tab, k string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(k)); err != nil {
		tb.t.Fatalf("press %q: %v", k, err)
	}
}
