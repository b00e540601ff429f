"""The jinja2 template, stylesheet and script of report.html (kept in Python, next to
the code that fills them, rather than as package data).

Only ``STYLE`` and ``SCRIPT`` (constants of this module) are inserted unescaped; every other value
goes through autoescape, and untrusted text (of the redacted audit) through the ``t`` filter (control bytes).
"""

from __future__ import annotations

STYLE = """
:root { --fg:#1d2127; --muted:#5b6470; --line:#d8dde3; --bg:#fff; --soft:#f5f7f9;
  --block:#b42318; --review:#a15c00; --info:#3b5b8c; --ok:#1a7f37; --waived:#6e7781; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; } h2 { font-size: 1.2rem; margin: 2rem 0 .6rem;
  border-bottom: 1px solid var(--line); padding-bottom: .2rem; } h3 { font-size: 1rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; margin: .4rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .45rem; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
/* a header breaks between words only (its column grows to the longest word instead) */
th { background: var(--soft); overflow-wrap: normal; word-break: normal; hyphens: none; }
.scroll { overflow-x: auto; }
/* ids and versions break at hyphens and dots only; a wide table scrolls instead */
table.vulns td { overflow-wrap: break-word; }
.tiles { display: flex; flex-wrap: wrap; gap: .6rem; margin: .8rem 0 1rem; }
.tile { flex: 1 1 9rem; border: 1px solid var(--line); border-top-width: 4px; border-radius: 6px;
  padding: .45rem .7rem; color: inherit; text-decoration: none; background: var(--bg); }
.tile .n { display: block; font-size: 1.5rem; font-weight: 700; line-height: 1.2; }
.tile .l { color: var(--muted); }
.tile.t-block { border-top-color: var(--block); } .tile.t-block .n { color: var(--block); }
.tile.t-review { border-top-color: var(--review); } .tile.t-review .n { color: var(--review); }
.tile.t-notchecked { border-top-color: #6f42c1; } .tile.t-notchecked .n { color: #6f42c1; }
.tile.t-commits { border-top-color: var(--info); }
.tile.zero .n { color: var(--muted); }
.sev { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-size: .8rem;
  font-weight: 600; border: 1px solid currentColor; }
.sev-critical { color: #fff; background: #7a1010; border-color: #7a1010; }
.sev-high { color: var(--block); } .sev-medium { color: var(--review); }
.sev-low { color: var(--info); } .sev-info { color: var(--muted); }
td.word, th.word { white-space: nowrap; overflow-wrap: normal; }
.muted { color: var(--muted); }
.verdict { display: inline-block; padding: .15rem .6rem; border-radius: 4px; color: #fff;
  font-weight: 700; }
.v-PASS { background: var(--ok); } .v-REVIEW { background: var(--review); }
.v-FAIL { background: var(--block); } .v-INCOMPLETE { background: #6f42c1; }
.st-ok { color: var(--ok); } .st-failed { color: var(--block); font-weight: 700; }
.st-incomplete { color: #6f42c1; font-weight: 700; } .st-not-requested { color: var(--muted); }
.a-block { color: var(--block); font-weight: 700; } .a-review { color: var(--review);
  font-weight: 700; } .a-info { color: var(--info); } .a-waived { color: var(--waived); }
.notchecked { border: 2px solid #6f42c1; background: #f6f0ff; padding: .6rem 1rem;
  border-radius: 6px; }
.allchecked { border: 1px solid var(--ok); padding: .4rem 1rem; border-radius: 6px; }
.commit { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem;
  margin: .5rem 0; break-inside: avoid; }
pre.msg { white-space: pre-wrap; color: var(--muted); margin: .2rem 0 .4rem; }
.commit.clean { border-left: 4px solid var(--ok); }
.commit.dirty { border-left: 4px solid var(--block); }
.commit.looked { border-left: 4px solid var(--review); }
.finding { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem;
  margin: .5rem 0; break-inside: avoid; }
.finding h3 { margin: 0 0 .3rem; font-size: .95rem; }
.finding.waived { opacity: .8; }
.finding p, .commit li { overflow-wrap: anywhere; }
pre.snippet { background: var(--soft); border: 1px solid var(--line); padding: .3rem 0;
  overflow-x: auto; margin: .4rem 0 0; white-space: pre; }
pre.snippet span { display: block; padding: 0 .6rem; }
pre.snippet span.hl { background: #fff1c2; }
pre.snippet .ln { display: inline; padding: 0 .8rem 0 0; color: var(--muted);
  user-select: none; }
pre.snippet.diff > code { display: inline-block; min-width: 100%; }
pre.snippet.diff span.row { padding: 0 .6rem 0 0; border-left: 3px solid transparent; }
pre.snippet.diff span.add { background: #e6ffec; }
pre.snippet.diff span.hl { background: #fff1c2; border-left-color: var(--review); }
pre.snippet.diff .ln { display: inline-block; min-width: 3.2em; text-align: right;
  padding: 0 .5rem 0 0; }
pre.snippet.diff .mk { display: inline; padding: 0 .5rem 0 0; color: var(--ok);
  font-weight: 700; user-select: none; }
.diffnote { margin: .4rem 0 0; font-size: .85rem; }
.files a { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
@media (max-width: 600px) {
  body { padding: .75rem; }
  h1 { font-size: 1.35rem; }
  th, td { padding: .2rem .3rem; }
}
.filters { background: var(--soft); border: 1px solid var(--line); padding: .4rem .8rem;
  border-radius: 6px; margin: .5rem 0; }
.filters label { margin-right: 1rem; }
[hidden] { display: none !important; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  .filters { display: none !important; }
  .finding[hidden] { display: block !important; }
  a { color: inherit; text-decoration: none; }
  h2 { break-after: avoid; }
}
"""

# Filters the finding cards by data-category / data-action / data-commit; shows the filter bar only
# when it runs, so a page without JavaScript shows every card and no dead controls.
SCRIPT = """
(function () {
  var bar = document.getElementById("filters");
  if (!bar) { return; }
  var selects = bar.querySelectorAll("select");
  var cards = document.querySelectorAll(".finding");
  var shown = document.getElementById("shown");
  function apply() {
    var n = 0;
    for (var i = 0; i < cards.length; i++) {
      var ok = true;
      for (var j = 0; j < selects.length; j++) {
        var want = selects[j].value;
        if (want && cards[i].getAttribute("data-" + selects[j].name) !== want) { ok = false; }
      }
      cards[i].hidden = !ok;
      if (ok) { n++; }
    }
    shown.textContent = String(n);
  }
  for (var k = 0; k < selects.length; k++) { selects[k].addEventListener("change", apply); }
  bar.hidden = false;
  apply();
})();
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{ page_title }}: {{ v.verdict.value }}</title>
<style>{{ style|safe }}</style>
</head>
<body>
<header>
<h1>{{ page_title }}: <span class="verdict v-{{ v.verdict.value }}">{{ v.verdict.value }}</span></h1>
{% if v.title %}<p class="muted">{{ v.title|t }}{% if v.tool %} · {{ v.tool|t }}{% endif %}</p>{% endif %}
{% if v.review %}<p id="review-coverage"><strong>Review coverage:</strong> {{ v.review|t }}</p>{% endif %}
<nav class="tiles" id="tiles" aria-label="counts">
{% for x in tiles %}
<a class="tile t-{{ x.kind }}{{ ' zero' if x.value.startswith('0') else '' }}" href="{{ x.href }}"><span class="n">{{ x.value }}</span><span class="l">{{ x.label }}</span></a>
{% endfor %}
</nav>
<ul>
{% for r in v.reasons %}
<li>{{ r|t }}</li>
{% endfor %}
</ul>
</header>

<section id="not-checked">
<h2>Not checked</h2>
{% if v.not_checked %}
<div class="notchecked">
<p><strong>These requested checks did not run; nothing here is reported clean:</strong></p>
<ul>
{% for x in v.not_checked %}
<li>{{ x|t }}</li>
{% endfor %}
</ul>
</div>
{% else %}
<p class="allchecked">Every requested check ran.</p>
{% endif %}
{% if v.not_requested %}
<p>Not requested by the spec, so not checked at all: {{ v.not_requested|join(", ") }}</p>
{% endif %}
</section>

<section id="stages">
<h2>Stages</h2>
<div class="scroll"><table>
<thead><tr><th class="word">stage</th><th class="word">status</th><th>summary</th></tr></thead>
<tbody>
{% for s in v.stages %}
<tr><td class="word">{{ s.name }}</td><td class="word st-{{ s.status.value }}">{{ s.status.value }}</td>
<td>{{ s.summary|t }}{% if s.problems %}<ul>{% for p in s.problems %}<li>{{ p|t }}</li>{% endfor %}</ul>{% endif %}</td></tr>
{% endfor %}
</tbody>
</table></div>
</section>

<section id="proof">
<h2>Tree proof</h2>
{% set p = v.proof %}
{% if p is none %}
<p>Not requested: the bundle was not compared with upstream.</p>
{% else %}
<p>{% if p.ok is true %}<strong class="st-ok">The bundle is exactly upstream + the listed commits.</strong>
{% elif p.ok is false %}<strong class="st-failed">The bundle is NOT upstream + the listed commits.</strong>
{% else %}<strong class="st-incomplete">Not decided.</strong>{% endif %}</p>
{% if p.statement %}<p>{{ p.statement|t }}</p>{% endif %}
<table>
<tr><th>upstream</th><td><code>{{ p.upstream_ref|t }}</code> → commit <code>{{ p.upstream_commit|t }}</code>, tree <code>{{ p.upstream_tree|t }}</code></td></tr>
{% if p.model == "merge" %}<tr><th>proof model</th><td>merge: the head's tree is the claim (upstream an ancestor, the listed commits exactly upstream..head); nothing replayed</td></tr>
{% else %}<tr><th>expected tree</th><td><code>{{ p.expected_tree|t or "—" }}</code> (upstream + series replayed)</td></tr>{% endif %}
<tr><th>bundle tree</th><td><code>{{ p.bundle_tree|t or "—" }}</code></td></tr>
<tr><th>series</th><td>{{ p.listed }} listed;
{% if p.order_ok is true %}in order{% elif p.order_ok is false %}<strong>NOT in the listed order</strong>{% else %}order unknown{% endif %};
unlisted (hidden): {% for s in p.unlisted %}<code>{{ s|t|short }}</code> {% else %}none{% endfor %};
missing: {% for s in p.missing %}<code>{{ s|t|short }}</code> {% else %}none{% endfor %};
merges: {% for s in p.merges %}<code>{{ s|t|short }}</code> {% else %}none{% endfor %}</td></tr>
</table>
{% if p.merge_changes %}
<h3>Changed while merging</h3>
<p>Lines git's own merge of the parents does not give: scanned and reviewed as the merge's.</p>
<ul>
{% for sha, paths in p.merge_changes %}<li>merge <code>{{ sha|t|short }}</code>: {% for x in paths[:10] %}<code>{{ x|t }}</code>{% if not loop.last %}, {% endif %}{% endfor %}{% if paths|length > 10 %} and {{ paths|length - 10 }} more{% endif %}</li>
{% endfor %}
</ul>
{% endif %}
{% if p.upstream_picks %}
<h3>Upstream's commits applied again</h3>
<p>Same patch-id as an upstream commit: their lines are upstream's, not the fork's, and they are no community commits.</p>
<ul>
{% for s, u in p.upstream_picks %}<li><code>{{ s|t|short }}</code> = upstream <code>{{ u|t|short }}</code></li>
{% endfor %}
</ul>
{% endif %}
{% if p.differences %}
<h3>Paths that differ</h3>
<table>
<thead><tr><th>path</th><th>change</th><th>detail</th></tr></thead>
<tbody>
{% for d in p.differences %}
<tr><td class="mono">{{ d.get("path")|t }}</td><td>{{ d.get("change")|t }}</td>
<td>{% for k, val in diff_details(d) %}{{ k|t }}: {{ val|t }}{% if not loop.last %}, {% endif %}{% endfor %}
{% if d.get("diff") %}<pre class="snippet">{{ d.get("diff")|t }}</pre>{% endif %}</td></tr>
{% endfor %}
</tbody>
</table>
{% if p.differences_total > p.differences|length %}<p>The stage listed {{ p.differences|length }} of {{ p.differences_total }} differences.</p>{% endif %}
{% endif %}
{% if p.anomalies %}
<h3>Anomalies worth a look</h3>
<ul>
{% for a in p.anomalies %}<li>{{ a|t }}</li>
{% endfor %}
</ul>
{% endif %}
{% endif %}
</section>

<section id="series">
<h2>The series, commit by commit</h2>
{% if not v.commits %}<p>No series commits were recorded.</p>{% endif %}
{% for c in v.commits %}
<div class="commit {{ 'clean' if not c.counts.total else ('dirty' if c.counts.block else 'looked') }}" id="c{{ c.index }}">
<h3>{{ c.index }}. <code>{{ c.sha|t|short }}</code> {{ c.subject|t }}</h3>
<p class="muted">{{ c.author|t }}{% if c.date %} · {{ c.date|t }}{% endif %}{% if c.patch_id %} · patch-id <code>{{ c.patch_id|t|short(12) }}</code>{% endif %}
{% if c.stats %} · {{ stats_text(c.stats)|t }}{% endif %}</p>
{% if c.body %}<pre class="msg">{{ c.body|t }}</pre>{% endif %}
{% if c.findings %}
<p>{{ c.counts.words() }}{% for cat, cnt in c.by_category %}{% if loop.first %} — {% endif %}{{ cat }}: {{ cnt.total }}{% if not loop.last %}, {% endif %}{% endfor %}</p>
<ul>
{% for f in c.findings %}
<li><span class="a-{{ state(f) }}">{{ state(f) }}</span> <span class="sev sev-{{ f.severity.value }}">{{ f.severity.value }}</span> <a href="#{{ anchor(f) }}">{{ f.category.value }} {{ f.path|t }}{% if f.line >= 1 %}:{{ f.line }}{% endif %}</a> — {{ f.message|t }}</li>
{% endfor %}
</ul>
{% else %}
<p class="st-ok">clean: no findings</p>
{% endif %}
</div>
{% endfor %}
{% for g in v.others %}
<div class="commit {{ 'dirty' if g.counts.block else 'looked' }}">
<h3>{{ g.label|t }}</h3>
<p>{{ g.counts.words() }}</p>
</div>
{% endfor %}
</section>

<section id="findings">
<h2>Findings</h2>
{% if not findings %}
<p>No findings{% if v.not_checked %} — but not everything was checked: see “Not checked”{% endif %}.</p>
{% else %}
<p>{{ v.counts.words() }}. By category:
{% for cat, group in v.by_category %}{{ cat }} ({{ group|length }}){% if not loop.last %}, {% endif %}{% endfor %}.</p>
<form class="filters" id="filters" hidden>
<label>category <select name="category"><option value="">all</option>
{% for c in categories %}<option value="{{ c }}">{{ c }}</option>{% endfor %}
</select></label>
<label>action <select name="action"><option value="">all</option>
{% for a in ("block", "review", "info", "waived") %}<option value="{{ a }}">{{ a }}</option>{% endfor %}
</select></label>
<label>commit <select name="commit"><option value="">all</option>
{% for c in v.commits if c.findings %}<option value="{{ c.sha|t }}">{{ c.index }}. {{ c.sha|t|short }} {{ c.subject|t|truncate(50) }}</option>{% endfor %}
<option value="none">not a series commit</option>
</select></label>
<span class="muted"><span id="shown">{{ findings|length }}</span> shown</span>
</form>
{% for f in findings %}
<article class="finding {{ 'waived' if f.waived else '' }}" id="{{ anchor(f) }}" data-category="{{ f.category.value }}" data-action="{{ state(f) }}" data-commit="{{ (f.commit|t) if f.commit in commit_index else 'none' }}">
<h3><span class="a-{{ state(f) }}">{{ state(f) }}</span> · <span class="sev sev-{{ f.severity.value }}" title="severity">{{ f.severity.value }}</span> · {{ f.category.value }} · <span class="mono">{{ f.path|t or "(no file)" }}{% if f.line >= 1 %}:{{ f.line }}{% endif %}</span></h3>
<p>{{ f.message|t }}</p>
<p class="muted">rule <code>{{ f.rule|t }}</code> · {{ f.scanner|t }} ·
{% if f.commit in commit_index %}commit <a href="#c{{ commit_index[f.commit] }}"><code>{{ f.commit|t|short }}</code></a> (#{{ commit_index[f.commit] }})
{% elif f.commit %}commit <code>{{ f.commit|t|short }}</code> (not in the listed series)
{% else %}{{ origin_words(f) }}{% endif %}
 · fingerprint <code>{{ f.fingerprint|t|short(12) }}</code></p>
{% set ua = v.unsigned_of(f) %}
{% if ua %}
<p>{{ ua.words() }} in area <strong>{{ ua.title|t }}</strong> with no sign-off:</p>
<ul class="hunks">
{% for h in ua.hunks %}<li><code>{{ h.where|t }}</code> · commit <code>{{ h.commit|t|short }}</code> · hunk <code>{{ h.id|t }}</code></li>
{% endfor %}
</ul>
{% endif %}
{% if f.waived %}<p class="a-waived">waived: {{ (f.waiver or "no reason given")|t }}</p>{% endif %}
{% set rows = diff_rows(f) %}
{% if rows and f.context %}
<p class="muted diffnote">lines {{ rows[0].line }}–{{ rows[-1].line }} · <strong>+</strong> added by the series, unmarked: context it left unchanged · highlighted: flagged</p>
<pre class="snippet diff"><code>{% for r in rows %}<span class="row{{ ' add' if r.mark == '+' else '' }}{{ ' hl' if r.flagged else '' }}"><span class="ln">{{ r.line }}</span><span class="mk">{{ r.mark }}</span>{{ r.text|t }}</span>{% endfor %}</code></pre>
{% elif rows %}
<pre class="snippet">{% for r in rows %}<span{% if r.flagged %} class="hl"{% endif %}>{% if r.line %}<span class="ln">{{ r.line }}</span>{% endif %}{{ r.text|t }}</span>{% endfor %}</pre>
{% endif %}
{% if f.help %}<p class="muted">{{ f.help|t }}</p>{% endif %}
</article>
{% endfor %}
{% endif %}
</section>

<section id="deps">
<h2>Dependencies</h2>
{% set d = v.deps.data if v.deps is not none else none %}
{% if v.deps is none %}<p>Not requested.</p>
{% elif d is none %}<p>No dependency data (the stage did not complete).</p>
{% else %}
<table>
{% for key, texts in (("added", d.added|map("decl")), ("removed", d.removed|map("decl")), ("changed", d.changed|map("dep"))) %}
<tr><th>{{ key }}</th><td>{% for x in texts %}<span class="mono">{{ x|t }}</span>{% if not loop.last %}, {% endif %}{% else %}none{% endfor %}</td></tr>
{% endfor %}
{% set src = d.source %}
<tr><th>vulnerability data</th><td>{{ src.kind|t }}{% if src.digest %}, digest <code>{{ src.digest|t|short(16) }}</code>{% endif %}{% if src.date %}, {{ src.date|t }}{% endif %}</td></tr>
</table>
{% set vulns = vulnerabilities(d.vulnerabilities) %}
{% if vulns %}
<h3>Known vulnerabilities</h3>
<div class="scroll"><table class="vulns">
<thead><tr><th>id</th><th>aliases</th><th>package</th><th>version</th><th>fixed in</th><th>severity</th></tr></thead>
<tbody>
{% for x in vulns %}<tr><td>{{ x.id|t }}</td><td>{{ x.aliases|t }}</td><td>{{ x.package|t }}</td><td>{{ x.version|t }}</td><td>{{ x.fixed|t }}</td><td>{{ x.severity|t }}</td></tr>
{% endfor %}
</tbody>
</table></div>
{% else %}<p>No known vulnerabilities in the data consulted.</p>{% endif %}
{% endif %}
</section>

<section id="build">
<h2>Build</h2>
{% set b = v.build.data if v.build is not none else none %}
{% if v.build is none %}<p>Not requested: nothing was built.</p>
{% elif b is none %}<p>No build data (the stage did not complete).</p>
{% else %}
{% set wheel = b.wheel %}
<table>
{% if wheel %}<tr><th>wheel</th><td class="mono">{{ wheel.file|t }}<br>sha256 {{ wheel.sha256|t }}</td></tr>{% endif %}
{% set groups = module_groups(b.modules) %}
{% if not groups %}<tr><th>compiled here</th><td>none</td></tr>{% endif %}
{% for action, names in groups %}
<tr><th>{{ "compiled here" if action == "built" else "modules, " ~ action|t }}</th><td>{% for n in names %}<span class="mono">{{ n|t }}</span>{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>
{% endfor %}
<tr><th>reproducibility</th><td>{{ reproducible_word(b.reproducible) }}</td></tr>
{% set oc = origin_counts(b.origins) %}
{% if oc %}<tr><th>origin of the wheel's files</th><td>{% for k, n in oc %}{{ k|t }}: {{ n }}{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>{% endif %}
</table>
{% endif %}
</section>

<section id="ship">
<h2>SBOM, provenance and service</h2>
<ul>
{% if v.sbom is none %}<li>SBOM: not requested</li>
{% else %}{% set sb = v.sbom.data.sbom if v.sbom.data is not none else none %}{% set pv = v.sbom.data.provenance if v.sbom.data is not none else none %}
<li>SBOM: {% if sb %}<span class="mono">{{ sb.file|t }}</span>{% if sb.serial %}, serial <code>{{ sb.serial|t }}</code>{% endif %}{% else %}not written{% endif %}</li>
<li>provenance: {% if pv %}<span class="mono">{{ (pv.file or "statement")|t }}</span>{% else %}not written{% endif %}</li>
{% endif %}
{% if v.unit is none %}<li>service unit: not requested</li>
{% else %}{% set u = v.unit.data %}
<li>service unit: <span class="mono">{{ (u.unit if u is not none else "")|t or "not written" }}</span>, <strong>{{ (exposure_text(u) if u is not none else "exposure not measured")|t }}</strong></li>
{% endif %}
</ul>
{% if artifacts %}
<h3>Files of this audit</h3>
<p class="muted">Beside this page in the audit directory (the links are relative: they open when the directory is kept together).</p>
<ul class="files">
{% for a in artifacts %}<li>{{ a.label }}: <a href="{{ a.href }}">{{ a.name|t }}</a></li>
{% endfor %}
</ul>
{% endif %}
</section>

<footer class="muted"><p>Generated by {{ v.tool|t }} from audit.json. Paths, messages and snippets come from the audited bundle and are shown as text; secrets are redacted.</p></footer>
<script>{{ script|safe }}</script>
</body>
</html>
"""
