// A loopback stand-in for a model vendor's cloud: a server on 127.0.0.1 (port 0) that real
// agents are pointed at. It speaks the four streaming wire formats the pinned agents use:
//   POST /v1/responses          (SSE; codex with wire_api = "responses")
//   POST /v1/chat/completions   (SSE; opencode through @ai-sdk/openai-compatible)
//   POST /v1beta/models/MODEL:streamGenerateContent?alt=sse
//                               (SSE; gemini-cli with an API key, GOOGLE_GEMINI_BASE_URL = origin)
//   POST /v1/messages           (SSE with stream: true; Claude Code, ANTHROPIC_BASE_URL = origin)
// What it answers is scripted by the test (plain text, or a tool call and then, once the tool's
// result comes back, text). Every request is recorded so a test can assert on what the agent
// actually sent. A reply can be held (`{ hold: reply }`): the request waits, unanswered, until
// the test releases it, so a test can act while a turn is under way (a cancel) without sleeping.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A request the model got, reduced to what the tests look at (the raw body is kept too). */
export interface ModelRequest {
  api: 'responses' | 'chat' | 'gemini' | 'anthropic' | 'other'
  method: string
  path: string
  /** The text of the last user message. */
  lastUserText: string
  /** Results of tool calls sent back to the model, in order (call id and output text). */
  toolResults: { callId: string; output: string }[]
  /** Names of the tools the agent offered the model. */
  tools: string[]
  body: unknown
}

/** What the model answers: text, or one tool call (the agent runs it and asks again). */
export type ModelReply =
  { text: string } | { toolCall: { name: string; arguments: Record<string, unknown> } }

/** What the responder answers: a reply now, or one held until the test releases it. */
export type ModelAnswer = ModelReply | { hold: ModelReply }

/** A request whose answer is held: the agent waits on it (the model is "thinking"). */
export interface HeldRequest {
  request: ModelRequest
  /** Whether the agent gave up the request (closed its connection), e.g. on a cancel. */
  abandoned: () => boolean
  /** Sends the held reply, if the agent still waits for it; else does nothing. */
  release: () => void
}

export type Responder = (req: ModelRequest) => ModelAnswer

export interface MockModel {
  /** The base URL agents are configured with: http://127.0.0.1:PORT/v1 */
  baseUrl: string
  /** http://127.0.0.1:PORT (Gemini's SDK adds /v1beta itself). */
  origin: string
  requests: ModelRequest[]
  /** Replaces how the model answers from now on. */
  respond: (responder: Responder) => void
  /** The next held request (one already waiting, or the next to arrive). */
  nextHold: () => Promise<HeldRequest>
  close: () => Promise<void>
}

type Json = Record<string, unknown>

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: unknown) => {
      const p = part as Json
      return typeof p.text === 'string' ? p.text : ''
    })
    .join('')
}

/** Normalizes a Responses API request body. */
function fromResponses(body: Json): Omit<ModelRequest, 'method' | 'path' | 'body'> {
  const input = Array.isArray(body.input) ? (body.input as Json[]) : []
  let lastUserText = typeof body.input === 'string' ? body.input : ''
  const toolResults: ModelRequest['toolResults'] = []
  for (const item of input) {
    if (item.role === 'user') lastUserText = textOf(item.content)
    if (item.type === 'function_call_output') {
      const out = item.output
      toolResults.push({
        callId: String(item.call_id),
        output: typeof out === 'string' ? out : JSON.stringify(out),
      })
    }
  }
  const tools = Array.isArray(body.tools)
    ? (body.tools as Json[]).map((t) => String(t.name ?? t.type))
    : []
  return { api: 'responses', lastUserText, toolResults, tools }
}

/** Normalizes a Chat Completions request body. */
function fromChat(body: Json): Omit<ModelRequest, 'method' | 'path' | 'body'> {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : []
  let lastUserText = ''
  const toolResults: ModelRequest['toolResults'] = []
  for (const m of messages) {
    if (m.role === 'user') lastUserText = textOf(m.content)
    if (m.role === 'tool') {
      toolResults.push({ callId: String(m.tool_call_id), output: textOf(m.content) })
    }
  }
  const tools = Array.isArray(body.tools)
    ? (body.tools as Json[]).map((t) => String((t.function as Json | undefined)?.name ?? t.type))
    : []
  return { api: 'chat', lastUserText, toolResults, tools }
}

/**
 * Normalizes a Gemini generateContent request body: `contents` of `{role, parts}`, where a part
 * is `{text}`, `{functionCall}` or `{functionResponse}`; tools as `functionDeclarations`.
 */
function fromGemini(body: Json): Omit<ModelRequest, 'method' | 'path' | 'body'> {
  const contents = Array.isArray(body.contents) ? (body.contents as Json[]) : []
  let lastUserText = ''
  const toolResults: ModelRequest['toolResults'] = []
  for (const c of contents) {
    const parts = Array.isArray(c.parts) ? (c.parts as Json[]) : []
    const texts = parts.filter((p) => typeof p.text === 'string').map((p) => p.text as string)
    if (c.role === 'user' && texts.length > 0) lastUserText = texts.join('\n')
    for (const p of parts) {
      const fr = p.functionResponse as Json | undefined
      if (fr === undefined) continue
      const response = fr.response as Json | undefined
      const output = response?.output ?? response
      toolResults.push({
        callId: String(fr.id ?? fr.name),
        output: typeof output === 'string' ? output : JSON.stringify(output),
      })
    }
  }
  const tools = Array.isArray(body.tools)
    ? (body.tools as Json[]).flatMap((t) =>
        Array.isArray(t.functionDeclarations)
          ? (t.functionDeclarations as Json[]).map((f) => String(f.name))
          : Object.keys(t),
      )
    : []
  return { api: 'gemini', lastUserText, toolResults, tools }
}

/**
 * Normalizes an Anthropic Messages request body: `messages` of `{role, content}`, where content
 * is a string or blocks (`text`, `tool_use`, `tool_result`); a user message that carries only
 * tool results leaves the last user text as it was.
 */
function fromAnthropic(body: Json): Omit<ModelRequest, 'method' | 'path' | 'body'> {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : []
  let lastUserText = ''
  const toolResults: ModelRequest['toolResults'] = []
  for (const m of messages) {
    if (m.role !== 'user') continue
    const blocks = Array.isArray(m.content) ? (m.content as Json[]) : []
    const text = typeof m.content === 'string' ? m.content : textOf(blocks)
    if (text !== '') lastUserText = text
    for (const b of blocks) {
      if (b.type === 'tool_result') {
        toolResults.push({ callId: String(b.tool_use_id), output: textOf(b.content) })
      }
    }
  }
  const tools = Array.isArray(body.tools)
    ? (body.tools as Json[]).map((t) => String(t.name ?? t.type))
    : []
  return { api: 'anthropic', lastUserText, toolResults, tools }
}

function sse(res: ServerResponse): (data: unknown, event?: string) => void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  })
  return (data, event) => {
    res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`)
  }
}

/** Two deltas, so the agent's streaming path is exercised rather than one lump. */
function halves(s: string): string[] {
  const half = Math.ceil(s.length / 2)
  return [s.slice(0, half), s.slice(half)]
}

let counter = 0
const nextId = (prefix: string) => `${prefix}_${++counter}`

/** Streams a reply in the Responses API's event sequence. */
function streamResponses(res: ServerResponse, model: string, reply: ModelReply): void {
  const send = sse(res)
  const id = nextId('resp')
  const response = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model }
  send(
    { type: 'response.created', response: { ...response, status: 'in_progress' } },
    'response.created',
  )
  let item: Json
  if ('text' in reply) {
    const itemId = nextId('msg')
    item = {
      type: 'message',
      id: itemId,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [] }],
    }
    send(
      {
        type: 'response.output_item.added',
        output_index: 0,
        item: { ...item, status: 'in_progress', content: [] },
      },
      'response.output_item.added',
    )
    for (const delta of halves(reply.text)) {
      if (delta === '') continue
      send(
        {
          type: 'response.output_text.delta',
          item_id: itemId,
          output_index: 0,
          content_index: 0,
          delta,
        },
        'response.output_text.delta',
      )
    }
  } else {
    item = {
      type: 'function_call',
      id: nextId('fc'),
      call_id: nextId('call'),
      name: reply.toolCall.name,
      arguments: JSON.stringify(reply.toolCall.arguments),
      status: 'completed',
    }
    send(
      { type: 'response.output_item.added', output_index: 0, item },
      'response.output_item.added',
    )
  }
  send({ type: 'response.output_item.done', output_index: 0, item }, 'response.output_item.done')
  send(
    {
      type: 'response.completed',
      response: {
        ...response,
        status: 'completed',
        output: [item],
        usage: {
          input_tokens: 10,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 5,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 15,
        },
      },
    },
    'response.completed',
  )
  res.end()
}

/** Streams a reply as Chat Completions chunks, ending with [DONE]. */
function streamChat(res: ServerResponse, model: string, reply: ModelReply): void {
  const send = sse(res)
  const id = nextId('chatcmpl')
  const chunk = (delta: Json, finish: string | null, extra: Json = {}) => ({
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  })
  send(chunk({ role: 'assistant', content: '' }, null))
  if ('text' in reply) {
    for (const content of halves(reply.text)) {
      if (content !== '') send(chunk({ content }, null))
    }
  } else {
    send(
      chunk(
        {
          tool_calls: [
            {
              index: 0,
              id: nextId('call'),
              type: 'function',
              function: {
                name: reply.toolCall.name,
                arguments: JSON.stringify(reply.toolCall.arguments),
              },
            },
          ],
        },
        null,
      ),
    )
  }
  send(
    chunk({}, 'text' in reply ? 'stop' : 'tool_calls', {
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    }),
  )
  res.write('data: [DONE]\n\n')
  res.end()
}

/** Streams a reply as Gemini GenerateContentResponse chunks (SSE `data:` lines, no [DONE]). */
function streamGemini(res: ServerResponse, model: string, reply: ModelReply): void {
  const send = sse(res)
  const responseId = nextId('gemini')
  const chunk = (parts: Json[], finish: boolean) => ({
    candidates: [
      {
        content: { role: 'model', parts },
        index: 0,
        ...(finish ? { finishReason: 'STOP' } : {}),
      },
    ],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: model,
    responseId,
  })
  if ('text' in reply) {
    const deltas = halves(reply.text).filter((d) => d !== '')
    deltas.forEach((text, i) => send(chunk([{ text }], i === deltas.length - 1)))
    if (deltas.length === 0) send(chunk([{ text: '' }], true))
  } else {
    send(
      chunk(
        [
          {
            functionCall: {
              id: nextId('call'),
              name: reply.toolCall.name,
              args: reply.toolCall.arguments,
            },
          },
        ],
        true,
      ),
    )
  }
  res.end()
}

/**
 * Streams a reply in the Messages API's event sequence: message_start, one content block (text
 * deltas, or a tool_use whose input arrives as input_json_delta), message_delta with the stop
 * reason, message_stop.
 */
function streamAnthropic(res: ServerResponse, model: string, reply: ModelReply): void {
  const send = sse(res)
  const event = (data: Json) => send(data, String(data.type))
  event({
    type: 'message_start',
    message: {
      id: nextId('msg'),
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: 10,
        output_tokens: 1,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    },
  })
  if ('text' in reply) {
    event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
    for (const text of halves(reply.text).filter((d) => d !== '')) {
      event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })
    }
  } else {
    const { name, arguments: input } = reply.toolCall
    event({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: nextId('toolu'), name, input: {} },
    })
    for (const partial_json of halves(JSON.stringify(input))) {
      event({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json },
      })
    }
  }
  event({ type: 'content_block_stop', index: 0 })
  event({
    type: 'message_delta',
    delta: { stop_reason: 'text' in reply ? 'end_turn' : 'tool_use', stop_sequence: null },
    usage: { output_tokens: 5 },
  })
  event({ type: 'message_stop' })
  res.end()
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** Starts the server; the default responder answers every request with "ok". */
export async function startMockModel(
  responder: Responder = () => ({ text: 'ok' }),
): Promise<MockModel> {
  let respond = responder
  const requests: ModelRequest[] = []
  // Held requests nobody took yet, and tests waiting for one.
  const held: HeldRequest[] = []
  const holdWaiters: ((h: HeldRequest) => void)[] = []
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req)
      let body: Json = {}
      try {
        body = raw === '' ? {} : (JSON.parse(raw) as Json)
      } catch {
        // Recorded as is; an agent sending non-JSON is something for the test to see.
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/'
      const api = path.endsWith('/responses')
        ? 'responses'
        : path.endsWith('/chat/completions')
          ? 'chat'
          : path.endsWith(':streamGenerateContent')
            ? 'gemini'
            : path.endsWith('/v1/messages')
              ? 'anthropic'
              : 'other'
      const normal =
        api === 'responses'
          ? fromResponses(body)
          : api === 'chat'
            ? fromChat(body)
            : api === 'gemini'
              ? fromGemini(body)
              : api === 'anthropic'
                ? fromAnthropic(body)
                : { api: 'other' as const, lastUserText: '', toolResults: [], tools: [] }
      const record: ModelRequest = {
        ...normal,
        method: req.method ?? 'GET',
        path,
        body: raw !== '' && Object.keys(body).length === 0 ? raw : body,
      }
      requests.push(record)
      // Gemini names the model in the path (/v1beta/models/MODEL:streamGenerateContent).
      const model =
        typeof body.model === 'string'
          ? body.model
          : (/\/models\/([^/:]+):/.exec(path)?.[1] ?? 'mock-model')
      // Claude Code warms its connection up with a HEAD of the base URL and ignores the answer.
      if (req.method === 'HEAD') {
        res.writeHead(200)
        res.end()
        return
      }
      if (req.method === 'GET' && path.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'mock-model', object: 'model' }] }))
        return
      }
      if (req.method !== 'POST' || api === 'other') {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: `mock model: no ${req.method} ${path}` } }))
        return
      }
      const answer = respond(record)
      let reply: ModelReply
      if ('hold' in answer) {
        reply = answer.hold
        let gone = false
        res.on('close', () => (gone = !res.writableFinished))
        await new Promise<void>((release) => {
          const h: HeldRequest = { request: record, abandoned: () => gone, release }
          const waiter = holdWaiters.shift()
          if (waiter === undefined) held.push(h)
          else waiter(h)
        })
        if (gone) return
      } else reply = answer
      if (api === 'anthropic') streamAnthropic(res, model, reply)
      else if (api === 'responses') streamResponses(res, model, reply)
      else if (api === 'gemini') streamGemini(res, model, reply)
      else streamChat(res, model, reply)
    })().catch((err: unknown) => {
      res.writeHead(500)
      res.end(String(err))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    origin: `http://127.0.0.1:${port}`,
    requests,
    respond: (r) => {
      respond = r
    },
    nextHold: () => {
      const h = held.shift()
      return h === undefined
        ? new Promise<HeldRequest>((resolve) => holdWaiters.push(resolve))
        : Promise.resolve(h)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
