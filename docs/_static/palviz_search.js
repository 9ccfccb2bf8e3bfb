/* The search page's snippets (palviz/book_search.py): each found page's snippet is cut from
   its article's text in window.PALVIZ_SEARCH (palviz_search_text.js), as Sphinx cuts it from
   the fetched page (240 characters around the last search word found), and a title's maths is
   shown as plain text. Nothing is fetched, so the page works from file://. */
document.addEventListener("DOMContentLoaded", () => {
  // after searchtools.js and language_data.js (splitQuery, Stemmer), which load later
  const data = window.PALVIZ_SEARCH || { pages: {}, titles: {} };
  const query = new URLSearchParams(window.location.search).get("q") || "";
  const words = splitQuery(query.toLowerCase());
  const stemmer = new Stemmer();
  const stems = words.map((w) => stemmer.stemWord(w));
  const suffix = DOCUMENTATION_OPTIONS.LINK_SUFFIX || ".html";
  const results = document.getElementById("search-results");
  if (!results) return;

  const snippet = (text) => {
    const lower = text.toLowerCase();
    const found = stems.map((k) => lower.indexOf(k)).filter((i) => i > -1);
    const start = Math.max((found.length ? found[found.length - 1] : 0) - 120, 0);
    const top = start === 0 ? "" : "...";
    const tail = start + 240 < text.length ? "..." : "";
    return top + text.substr(start, 240).trim() + tail;
  };

  const plainTitle = (link) => {
    let text = link.textContent;
    for (const [raw, plain] of Object.entries(data.titles)) text = text.replaceAll(raw, plain);
    if (text !== link.textContent) link.textContent = text;
  };

  const annotate = (item) => {
    const link = item.querySelector("a");
    if (!link || item.querySelector("p.context")) return;
    plainTitle(link);
    const doc = (link.getAttribute("href") || "").split("#")[0].replace(suffix, "");
    const text = data.pages[doc];
    if (!text) return;
    const summary = document.createElement("p");
    summary.classList.add("context");
    summary.textContent = snippet(text);
    item.appendChild(summary);
    if (typeof _highlightText === "function")
      words.forEach((w) => _highlightText(summary, w, "highlighted"));
  };

  const annotateAll = () => results.querySelectorAll("li").forEach(annotate);
  annotateAll();
  new MutationObserver(annotateAll).observe(results, { childList: true, subtree: true });
});
