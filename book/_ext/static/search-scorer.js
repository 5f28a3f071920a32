// The book's search ranking (Sphinx's html_search_scorer, set by book/_ext/posgeom_book.py): Sphinx's
// default weights, and a reader's pages first. A match in the API reference (its objects score up to
// 26, above a chapter whose title holds the word, 15) is listed after every chapter and page of prose,
// in its own order; it is never dropped.
var Scorer = {
  // pages whose results come after the others, and by how much they are lowered
  apiPages: ["book/api"],
  apiPenalty: 100,
  score: (result) => {
    const [docname, title, anchor, descr, score, filename] = result;
    return Scorer.apiPages.includes(docname) ? score - Scorer.apiPenalty : score;
  },
  // Sphinx's defaults (sphinx/themes/basic/static/searchtools.js)
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: {0: 15, 1: 5, 2: -5},
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
