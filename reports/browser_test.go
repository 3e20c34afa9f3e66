package reports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestReportInBrowser renders a report's index.html in headless Chromium
// from a file: URL (so offline): every image must load and the console
// must stay free of errors. It takes PNG screenshots of the top of the page and of its charts; with
// GRADTUNE_SCREENSHOT=PATH it keeps it there (docs/report-screenshot.png
// is made so). Without Chromium it skips, unless GRADTUNE_REQUIRE_CHROMIUM=1
// (.ci/run sets it) makes that a failure.
func TestReportInBrowser(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		if os.Getenv("GRADTUNE_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("GRADTUNE_REQUIRE_CHROMIUM=1 but no chromium found (apt-get install chromium, or set GRADTUNE_CHROMIUM)")
		}
		t.Skip("chromium not found: the report is not rendered in a browser (apt-get install chromium)")
	}
	dir := filepath.Join(t.TempDir(), "report")
	peers := readPeers(t, "peers-activations.jsonl")
	if _, err := Write(load(t, "h200-activations.db"), dir, Options{Peers: peers, NoPNG: true}); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1400))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				problems = append(problems, fmt.Sprintf("console %s: %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Error())
		}
	})
	var images, loaded int
	var title string
	var shot, charts []byte
	err := chromedp.Run(ctx,
		chromedp.Navigate("file://"+filepath.Join(dir, "index.html")),
		chromedp.WaitReady("body"),
		chromedp.Poll(`Array.from(document.images).every(i => i.complete)`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`document.images.length`, &images),
		chromedp.Evaluate(`Array.from(document.images).filter(i => i.naturalWidth > 0 && i.naturalHeight > 0).length`, &loaded),
		chromedp.Title(&title),
		chromedp.CaptureScreenshot(&shot),
		chromedp.ScrollIntoView("#charts", chromedp.ByQuery),
		chromedp.CaptureScreenshot(&charts),
	)
	if err != nil {
		t.Fatal(err)
	}
	if images < 20 || loaded != images {
		t.Errorf("%d of %d images loaded, want all of at least 20", loaded, images)
	}
	if !strings.Contains(title, "h200-activations.db") {
		t.Errorf("title %q", title)
	}
	mu.Lock()
	for _, p := range problems {
		t.Error(p)
	}
	mu.Unlock()
	if len(shot) < 10000 {
		t.Errorf("screenshot of %d bytes", len(shot))
	}
	if path := os.Getenv("GRADTUNE_SCREENSHOT"); path != "" {
		second := strings.TrimSuffix(path, filepath.Ext(path)) + "-charts" + filepath.Ext(path)
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(second, charts, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshots written to %s and %s", path, second)
	}
}

// findChromium is $GRADTUNE_CHROMIUM, else Debian's chromium or Google's
// chrome on the PATH.
func findChromium() string {
	if p := os.Getenv("GRADTUNE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
