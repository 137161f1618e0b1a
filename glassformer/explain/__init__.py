"""The article made visible: terminal renderings and figures. The core never imports this."""
