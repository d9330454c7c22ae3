// Drives sluiced's dashboard in headless Chromium over the DevTools protocol (puppeteer-core,
// pointed at the system browser). Run by dashboard_browser_test.cc, which starts sluiced and
// passes: SLUICED_URL (http://127.0.0.1:PORT), CHROMIUM (the browser), OUT_DIR (screenshots).
// Prints one line per failed check and exits 1 when any failed.
'use strict';
const puppeteer = require('puppeteer-core');
const fs = require('fs');
const path = require('path');

const base = process.env.SLUICED_URL;
const outDir = process.env.OUT_DIR;
const XSS = ['<img src=x onerror=window.__pwned=1>', '<script>window.__pwned=2</script>'];
const LONG = 'v'.repeat(300);
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function decide(domain, entries) {
  const r = await fetch(base + '/json', {
    method: 'POST',
    body: JSON.stringify({domain, descriptors: [{entries}]}),
  });
  return r.status;
}

// A few seconds of traffic shaped like a real edge: many callers under their limits, a few
// hammering theirs.
async function traffic(seconds) {
  for (let s = 0; s < seconds; ++s) {
    const calls = [];
    for (let i = 0; i < 40; ++i) {
      calls.push(decide('edge', [{key: 'remote_address', value: '10.0.0.' + (i % 23)}]));
    }
    for (let i = 0; i < 12 + 3 * s; ++i) {
      calls.push(decide('edge', [{key: 'user', value: i % 3 ? 'mallory' : 'alice'}]));
    }
    for (let i = 0; i < 25; ++i) {
      calls.push(decide('api', [{key: 'client_id', value: 'svc-' + (i % 5)}]));
    }
    calls.push(decide('api', [{key: 'client_id', value: 'batch-export'}]));
    await Promise.all(calls);
    await sleep(600);
  }
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({width: 1280, height: 900});
    const consoleErrors = [];
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    const requests = [];
    const failed = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('requestfailed', (r) => failed.push(r.url() + ' ' + (r.failure() || {}).errorText));
    page.on('requestfinished', (r) => {
      const res = r.response();
      if (!res || res.status() >= 400) failed.push(r.url() + ' ' + (res ? res.status() : 'none'));
    });
    let navigations = 0;
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) ++navigations; });

    const first = await page.goto(base + '/dashboard', {waitUntil: 'load'});
    check(first.status() === 200, 'GET /dashboard answered ' + first.status());
    check(first.headers()['cache-control'] === 'no-store', 'no Cache-Control: no-store');
    check((first.headers()['content-security-policy'] || '').includes("script-src 'self'"),
          'no strict Content-Security-Policy');
    await page.evaluate(() => { window.__loadedOnce = true; });

    // Now the traffic, with the page open: the denials must show up by themselves.
    for (const v of XSS) await decide('edge', [{key: 'user', value: v}]);
    for (let i = 0; i < 6; ++i) {
      for (const v of XSS) await decide('edge', [{key: 'user', value: v}]);
      await decide('edge', [{key: 'user', value: LONG}]);
    }
    await traffic(8);
    await page.waitForFunction(
        (xss) => [...document.querySelectorAll('#denied td .v')].some((e) => e.textContent === xss),
        {timeout: 15000}, XSS[0]);
    await page.waitForFunction(
        () => [...document.querySelectorAll('#denied td .v')].some((e) => e.textContent === 'mallory'),
        {timeout: 15000});
    const shown = await page.evaluate(() => ({
      values: [...document.querySelectorAll('#denied td .v')].map((e) => e.textContent),
      cut: document.querySelectorAll('#denied .cut').length,
      images: document.querySelectorAll('img').length,
      inlineScripts: [...document.scripts].filter((s) => !s.src).length,
      pwned: window.__pwned,
      loadedOnce: window.__loadedOnce === true,
      charts: document.querySelectorAll('#charts canvas').length,
    }));
    for (const v of XSS) check(shown.values.includes(v), 'value not shown as text: ' + v);
    check(shown.values.some((v) => LONG.startsWith(v) && v.length < LONG.length),
          'the long value is not cut');
    check(shown.cut > 0, 'no visible cut marker');
    check(shown.images === 0, 'an <img> element appeared in the document');
    check(shown.inlineScripts === 0, 'an inline <script> appeared in the document');
    check(shown.pwned === undefined, 'a value ran as code');
    check(shown.loadedOnce && navigations === 1, 'the page reloaded (' + navigations + ' loads)');
    check(shown.charts === 2, 'expected a chart per domain, got ' + shown.charts);

    fs.mkdirSync(outDir, {recursive: true});
    await page.screenshot({path: path.join(outDir, 'dashboard.png'), fullPage: true});
    await page.emulateMediaFeatures([{name: 'prefers-color-scheme', value: 'dark'}]);
    await sleep(1200);
    await page.screenshot({path: path.join(outDir, 'dashboard-dark.png'), fullPage: true});
    await page.emulateMediaFeatures([{name: 'prefers-color-scheme', value: 'light'}]);

    // A click on a domain narrows to it.
    const buttons = await page.$$('#domains button');
    let apiButton = null;
    for (const b of buttons) {
      if ((await b.evaluate((e) => e.textContent)) === 'api') apiButton = b;
    }
    check(apiButton !== null, 'no button for the domain api');
    if (apiButton) {
      await apiButton.click();
      await page.waitForFunction(
          () => document.querySelectorAll('#charts canvas').length === 1 &&
              [...document.querySelectorAll('#callers tbody tr td:first-child')]
                  .every((e) => e.textContent === 'api'),
          {timeout: 5000});
      check(new URL(page.url()).searchParams.get('domain') === 'api', 'the URL does not keep the domain');
    }
    await page.setViewport({width: 390, height: 844, isMobile: true});
    await sleep(1200);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
    check(overflow <= 0, 'the phone layout scrolls sideways by ' + overflow + ' px');
    await page.screenshot({path: path.join(outDir, 'dashboard-phone.png'), fullPage: true});

    check(consoleErrors.length === 0, 'console errors: ' + consoleErrors.join(' | '));
    check(failed.length === 0, 'requests failed: ' + failed.join(' | '));
    const foreign = requests.filter((u) => new URL(u).origin !== new URL(base).origin);
    check(foreign.length === 0, 'requests to other origins: ' + foreign.join(' | '));
    check(requests.filter((u) => u.includes('/dashboard/feed.json')).length >= 3,
          'the page did not poll its feed');
  } finally {
    await browser.close();
  }
  for (const f of failures) console.log('FAIL: ' + f);
  console.log(failures.length === 0 ? 'dashboard browser checks passed' : failures.length + ' failed');
  process.exit(failures.length === 0 ? 0 : 1);
})().catch((e) => {
  console.log('FAIL: ' + (e && e.stack || e));
  process.exit(1);
});
