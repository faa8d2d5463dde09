/**
 * Reads a kith-pair1 QR from the camera: the browser's BarcodeDetector where it has one (Chrome
 * on Android, macOS, ChromeOS), else jsQR (a maintained decoder, loaded only when needed) on
 * frames drawn to a canvas. Everything stays in the page; no frame leaves it.
 */
interface Detector {
  detect(source: CanvasImageSource): Promise<{ rawValue: string }[]>
}
interface DetectorClass {
  new (opts: { formats: string[] }): Detector
  getSupportedFormats(): Promise<string[]>
}

type Decode = (source: HTMLVideoElement | ImageBitmap) => Promise<string | undefined>

async function decoder(): Promise<Decode> {
  const Native = (globalThis as { BarcodeDetector?: DetectorClass }).BarcodeDetector
  if (Native !== undefined && (await Native.getSupportedFormats()).includes('qr_code')) {
    const d = new Native({ formats: ['qr_code'] })
    return async (source) => (await d.detect(source))[0]?.rawValue
  }
  const jsQR = (await import('jsqr')).default
  const canvas = document.createElement('canvas')
  const ctx = canvas.getContext('2d', { willReadFrequently: true })
  if (ctx === null) throw new Error('this browser cannot read images')
  return (source) => {
    const w = source instanceof HTMLVideoElement ? source.videoWidth : source.width
    const h = source instanceof HTMLVideoElement ? source.videoHeight : source.height
    if (w === 0 || h === 0) return Promise.resolve(undefined)
    canvas.width = w
    canvas.height = h
    ctx.drawImage(source, 0, 0, w, h)
    const img = ctx.getImageData(0, 0, w, h)
    return Promise.resolve(jsQR(img.data, w, h, { inversionAttempts: 'attemptBoth' })?.data)
  }
}

/** Whether this page may use a camera (a secure context with mediaDevices). */
export function cameraAvailable(): boolean {
  return window.isSecureContext && navigator.mediaDevices?.getUserMedia !== undefined
}

/** Scans until a code is read (then stops the camera) or `stop()` is called. */
export async function scanCamera(
  video: HTMLVideoElement,
  onCode: (text: string) => void,
): Promise<() => void> {
  const decode = await decoder()
  const stream = await navigator.mediaDevices.getUserMedia({
    video: { facingMode: 'environment' },
    audio: false,
  })
  video.srcObject = stream
  await video.play()
  let stopped = false
  const stop = () => {
    stopped = true
    for (const t of stream.getTracks()) t.stop()
    video.srcObject = null
  }
  const tick = async () => {
    if (stopped) return
    const text = await decode(video).catch(() => undefined)
    if (text !== undefined && text !== '') {
      stop()
      onCode(text)
      return
    }
    setTimeout(() => void tick(), 150)
  }
  void tick()
  return stop
}

/** Reads a QR from a picture (a screenshot of the terminal, a photo). */
export async function scanImage(file: Blob): Promise<string | undefined> {
  const decode = await decoder()
  const bitmap = await createImageBitmap(file)
  try {
    return await decode(bitmap)
  } finally {
    bitmap.close()
  }
}
