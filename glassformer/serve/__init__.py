"""`glassformer serve`: the models behind an HTTP API, a WebSocket and a web page.

app.py (the application), config.py (ServeConfig), routes_speech.py (transcribe, listen),
routes_openai.py (OpenAI's /v1/audio/transcriptions), routes_text.py (generate, translate,
attention), model_thread.py (the models run one call at a time, in turns), batching.py (one
encoder pass for concurrent clips), models.py (loaded once at start), http.py (errors, size
and time limits, Host and Origin), audio_upload.py (audio bytes in memory), attention.py
(maps as JSON), static/ (the page); wyoming.py (`glassformer wyoming`, the same Listener over
the Wyoming protocol). Endpointing lives in audio/endpoint.py, behind the Listener.
Nothing in the package imports this subpackage; it needs the `serve` extra.
"""
