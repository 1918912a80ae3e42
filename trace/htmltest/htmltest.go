// Package htmltest renders a page in headless Chromium and reads the
// document its script built, for the tests of the timeline page (package
// trace) and of the live page `csisim serve` serves: what they check is the
// DOM after the page's JavaScript ran, not the template's text.
package htmltest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// T is what the helpers need of a test: a *testing.T or Ginkgo's GinkgoT().
type T interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
}

// Chromium is the path of the Chromium binary (the Debian package
// chromium), or "" and the test is skipped, saying so, where there is none.
func Chromium(t T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("Chromium is not installed (apt-get install chromium): the page is not rendered")
	return ""
}

// flags keep headless Chromium from reaching the network on its own and
// from needing a sandbox (the tests run as root) or a GPU.
var flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
	"--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars"}

// run runs Chromium with a profile of its own in a temporary directory.
func run(t T, args ...string) []byte {
	t.Helper()
	bin := Chromium(t)
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(append([]string{}, flags...), "--user-data-dir="+profile), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Chromium's helpers may outlive it a moment; wait for them so that
	// the profile directory can go.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// DOM loads url in headless Chromium, lets its scripts run for budget of
// virtual time (network answers included; 0: until the page has loaded),
// and returns the document they built.
func DOM(t T, url string, budget time.Duration) *html.Node {
	t.Helper()
	return DOMAt(t, url, "", budget)
}

// DOMAt is DOM in a window of size ("1280,900"; "" for Chromium's
// default), for a page whose script measures its layout.
func DOMAt(t T, url, size string, budget time.Duration) *html.Node {
	t.Helper()
	args := []string{"--dump-dom"}
	if size != "" {
		args = append(args, "--window-size="+size)
	}
	if budget > 0 {
		args = append(args, fmt.Sprintf("--virtual-time-budget=%d", budget.Milliseconds()))
	}
	out := run(t, append(args, url)...)
	doc, err := html.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("parsing the DOM Chromium dumped: %v", err)
	}
	if ByID(doc, "timeline") == nil && len(out) < 200 {
		t.Fatalf("Chromium dumped no page for %s:\n%s", url, out)
	}
	return doc
}

// Screenshot writes a PNG of url, size "1400,900", to file.
func Screenshot(t T, url, size, file string) {
	t.Helper()
	run(t, "--screenshot="+file, "--window-size="+size, "--virtual-time-budget=2000", url)
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Fatalf("Chromium wrote no screenshot to %s: %v", file, err)
	}
}

// Attr is the value of n's attribute key, "" if it has none.
func Attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// HasAttr says whether n has the attribute key.
func HasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// HasClass says whether n's class list holds class.
func HasClass(n *html.Node, class string) bool {
	return n.Type == html.ElementNode && strings.Contains(" "+Attr(n, "class")+" ", " "+class+" ")
}

// All are the elements under n (n included) with the class, in document
// order.
func All(n *html.Node, class string) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if HasClass(d, class) {
			out = append(out, d)
		}
	}
	if HasClass(n, class) {
		out = append([]*html.Node{n}, out...)
	}
	return out
}

// ByID is the element with the id, nil if there is none.
func ByID(n *html.Node, id string) *html.Node {
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && Attr(d, "id") == id {
			return d
		}
	}
	return nil
}

// Text is the text under n.
func Text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}
