/* scalebook: search result snippets read like the page (loaded by book/_ext/scalebook_site.py).
   Sphinx's search shows a snippet of each result page's text. Read as it is, that text includes
   the code of the cells (hidden ones too) and the math as TeX between \( and \). This replaces
   Search.htmlToText (sphinx/themes/basic/static/searchtools.js) with one that leaves out the
   cells' code, buttons and scripts, and writes each formula as its TeX without the delimiters. */
(function () {
  "use strict";
  function strip(tex) {
    return tex.replace(/^\s*(\\\(|\\\[|\$\$?)/, "").replace(/(\\\)|\\\]|\$\$?)\s*$/, "").trim();
  }
  function readable(htmlString, anchor) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const drop = [".headerlink", "script", "style", ".cell_input", "button", ".toggle-hidden > summary",
                  ".copybtn", "mjx-assistive-mml", "nav", ".bd-header-article", ".bd-sidebar-secondary",
                  ".prev-next-area", ".dropdown-menu"];
    for (const query of drop) doc.querySelectorAll(query).forEach((el) => el.remove());
    doc.querySelectorAll(".math").forEach((el) => { el.textContent = " " + strip(el.textContent) + " "; });
    const main = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
    let block = main;
    if (anchor && main) block = main.querySelector(anchor) || main;
    return block ? block.textContent.replace(/\s+/g, " ") : "";
  }
  function install() {
    if (typeof Search !== "undefined" && Search.htmlToText) Search.htmlToText = readable;
  }
  window.scalebookSearchText = readable;  // for tools/browser_check.py
  install();
  document.addEventListener("DOMContentLoaded", install);
})();
