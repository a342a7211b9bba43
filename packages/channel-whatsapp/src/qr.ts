import QRCode from 'qrcode';

/** A QR code as an SVG image (for the page). */
export function qrSvg(text: string): Promise<string> {
  return QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'L', margin: 2 });
}

/** A QR code drawn in text, with half-block characters (for a terminal). */
export function qrText(text: string): Promise<string> {
  return QRCode.toString(text, { type: 'utf8', errorCorrectionLevel: 'L', margin: 2 });
}
