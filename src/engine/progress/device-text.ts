/** A session's device in words (the panel, the log, the report); no imports, so the webview bundle stays small. */
export function deviceText(device: { name: string; arch: string; replayedFrom?: string }): string {
  return `${device.name} (${device.replayedFrom !== undefined ? `replayed from ${device.replayedFrom}, no GPU` : device.arch})`;
}
