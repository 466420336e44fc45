#!/usr/bin/python3
"""An OpenAI-compatible transcription server around Debian's pocketsphinx, for tests.

POST /v1/audio/transcriptions takes a multipart upload whose `file` is a 16 kHz 16-bit mono WAV
and answers {"text": ...}: a real recognizer behind the gateway's, on the machine, with no model
to download (apt-get install python3-pocketsphinx pocketsphinx-en-us). It listens on 127.0.0.1
and a free port, printed alone on the first line of stdout.

--grammar FILE restricts what it hears to a JSGF grammar: pocketsphinx's general English model
mishears synthetic speech, a command grammar recognises it reliably (as a command device would).
"""
import argparse
import email.parser
import email.policy
import io
import json
import os
import threading
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pocketsphinx

MODEL = '/usr/share/pocketsphinx/model/en-us'


def decoder_for(grammar):
    config = pocketsphinx.Decoder.default_config()
    config.set_string('-hmm', os.path.join(MODEL, 'en-us'))
    config.set_string('-dict', os.path.join(MODEL, 'cmudict-en-us.dict'))
    if grammar:
        config.set_string('-jsgf', grammar)
    else:
        config.set_string('-lm', os.path.join(MODEL, 'en-us.lm.bin'))
    config.set_string('-logfn', os.devnull)
    return pocketsphinx.Decoder(config)


def form_fields(content_type, body):
    """The parts of a multipart/form-data body, by name: bytes for a file, text otherwise."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b'Content-Type: ' + content_type.encode('latin-1') + b'\r\n\r\n' + body)
    if not message.is_multipart():
        raise ValueError('not a multipart/form-data body')
    fields = {}
    for part in message.iter_parts():
        name = part.get_param('name', header='content-disposition')
        payload = part.get_payload(decode=True)
        fields[name] = payload if part.get_filename() else payload.decode('utf-8')
    return fields


def pcm_of(wav_bytes):
    with wave.open(io.BytesIO(wav_bytes)) as wav:
        if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (16000, 1, 2):
            raise ValueError('the WAV must be 16 kHz, mono, 16-bit; it is %d Hz, %d channel(s), %d bytes a sample'
                             % (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()))
        return wav.readframes(wav.getnframes())


class Handler(BaseHTTPRequestHandler):
    decoder = None
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', '0')))
        if not self.path.rstrip('/').endswith('/audio/transcriptions'):
            return self.answer(404, {'error': {'message': 'not found'}})
        try:
            pcm = pcm_of(form_fields(self.headers.get('Content-Type', ''), body)['file'])
        except (KeyError, ValueError, EOFError, wave.Error) as error:
            return self.answer(400, {'error': {'message': str(error)}})
        with self.lock:
            self.decoder.start_utt()
            self.decoder.process_raw(pcm, False, True)
            self.decoder.end_utt()
            hypothesis = self.decoder.hyp()
        self.answer(200, {'text': hypothesis.hypstr if hypothesis else ''})

    def answer(self, status, body):
        data = json.dumps(body).encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--grammar', help='a JSGF grammar to restrict recognition to')
    Handler.decoder = decoder_for(parser.parse_args().grammar)
    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
