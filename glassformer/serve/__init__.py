"""`glassformer serve`: the models behind an HTTP API, a WebSocket and a web page.

app.py (the application), routes_speech.py (transcribe, listen), routes_text.py (generate,
translate, attention), batching.py (one encoder pass for concurrent clips), listen.py
(energy endpointing), models.py (loaded once at start), http.py (errors, size limit),
audio_upload.py (audio bytes in memory), attention.py (maps as JSON), static/ (the page).
Nothing in the package imports this subpackage; it needs the `serve` extra.
"""
