/**
 * The Content-Security-Policy of the console's pages: scripts, styles and connections from the
 * gateway itself only (no inline script or style, nothing from a CDN), images also from data: and
 * blob: URLs (previews of the caller's own files) and from `extraOrigins` (the public base URL,
 * when image URLs and upload hosts name an origin other than the page's), never framed.
 */
export function consoleContentSecurityPolicy(extraOrigins: readonly string[]): string {
  const extra = extraOrigins.map((origin) => ` ${origin}`).join('');
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob:${extra}`,
    `connect-src 'self'${extra}`,
    "font-src 'self'",
    "object-src 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; ');
}
