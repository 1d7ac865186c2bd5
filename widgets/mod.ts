/** The embeddable widgets (decisions §29): the review widget's page, parameters and built assets. */
export { type EmbedParamError, type EmbedParams, parseEmbedParams } from "./embed_params.ts";
export {
  renderParamErrorPage,
  renderReviewPage,
  REVIEW_EMBED_PATH,
  REVIEW_SCRIPT_PATH,
  REVIEW_STYLE_PATH,
  WIDGET_CSP,
  type WidgetPageSettings,
} from "./review_page.ts";
export { BUILDER_CSP, renderBuilderPage, REVIEW_BUILDER_PATH } from "./builder_page.ts";
export type { WidgetBundle } from "./assets.ts";
