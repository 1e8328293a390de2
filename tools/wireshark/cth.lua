-- Wireshark / tshark dissector of symphony-emu's collective transport header (CTH).
--
-- Wire format: docs/DESIGN.md section 3 (hostapps/wire.py is the reference codec):
-- 16 bytes in network byte order, carried in UDP to port 4793 (CTH_UDP_PORT), version 2.
--
--   byte 0      version:4 | type:4     DATA=1, ACK=2, NACK=3, CNP=4
--   byte 1      flags                  bit0 LAST, bit1 ECE, bit2 RETX
--   byte 2      job_id
--   byte 3      channel                the job's ring (NCCL-style channel)
--   bytes 4-5   step                   collective-global step, modulo 2^16
--   bytes 6-7   src_rank
--   bytes 8-9   dst_rank
--   bytes 10-12 psn                    24 bits, modulo 2^24; DATA: sequence number; ACK: next expected PSN
--   bytes 13-15 offset                 24 bits, DATA: byte offset of the payload in the step's chunk
--
-- Use:  tshark -X lua_script:tools/wireshark/cth.lua -r s1-eth1.pcap -Y cth -T fields \
--           -e cth.type -e cth.job -e cth.step -e cth.psn
-- or copy this file to ~/.local/lib/wireshark/plugins/ for Wireshark.
-- Another UDP port: Decode As... CTH, or -d udp.port==PORT,cth.

local CTH_UDP_PORT = 4793
local CTH_LEN = 16

local cth = Proto("cth", "Symphony collective transport header")

local types = { [1] = "DATA", [2] = "ACK", [3] = "NACK", [4] = "CNP" }

local f = cth.fields
f.version  = ProtoField.uint8("cth.version", "Version", base.DEC, nil, 0xF0)
f.type     = ProtoField.uint8("cth.type", "Type", base.DEC, types, 0x0F)
f.flags    = ProtoField.uint8("cth.flags", "Flags", base.HEX)
f.last     = ProtoField.bool("cth.flags.last", "LAST (last packet of the step's chunk)", 8, nil, 0x01)
f.ece      = ProtoField.bool("cth.flags.ece", "ECE (ACK echoes a CE mark)", 8, nil, 0x02)
f.retx     = ProtoField.bool("cth.flags.retx", "RETX (retransmission)", 8, nil, 0x04)
f.job      = ProtoField.uint8("cth.job", "Job", base.DEC)
f.channel  = ProtoField.uint8("cth.channel", "Channel", base.DEC)
f.step     = ProtoField.uint16("cth.step", "Step", base.DEC)
f.src_rank = ProtoField.uint16("cth.src_rank", "Source rank", base.DEC)
f.dst_rank = ProtoField.uint16("cth.dst_rank", "Destination rank", base.DEC)
f.psn      = ProtoField.uint24("cth.psn", "PSN", base.DEC)
f.offset   = ProtoField.uint24("cth.offset", "Offset", base.DEC)

local e_short = ProtoExpert.new("cth.short", "CTH shorter than 16 bytes", expert.group.MALFORMED, expert.severity.ERROR)
cth.experts = { e_short }

function cth.dissector(buf, pinfo, tree)
    local n = buf:len()
    pinfo.cols.protocol = "CTH"
    local sub = tree:add(cth, buf(0, math.min(n, CTH_LEN)))
    if n < CTH_LEN then
        sub:add_proto_expert_info(e_short)
        return 0
    end
    local b0 = buf(0, 1):uint()
    local ctype = types[b0 % 16] or ("type " .. tostring(b0 % 16))
    sub:add(f.version, buf(0, 1))
    sub:add(f.type, buf(0, 1))
    local fl = sub:add(f.flags, buf(1, 1))
    fl:add(f.last, buf(1, 1))
    fl:add(f.ece, buf(1, 1))
    fl:add(f.retx, buf(1, 1))
    sub:add(f.job, buf(2, 1))
    sub:add(f.channel, buf(3, 1))
    sub:add(f.step, buf(4, 2))
    sub:add(f.src_rank, buf(6, 2))
    sub:add(f.dst_rank, buf(8, 2))
    sub:add(f.psn, buf(10, 3))
    sub:add(f.offset, buf(13, 3))
    local summary = string.format("%s job=%d ch=%d step=%d %d->%d psn=%d", ctype, buf(2, 1):uint(), buf(3, 1):uint(),
        buf(4, 2):uint(), buf(6, 2):uint(), buf(8, 2):uint(), buf(10, 3):uint())
    sub:append_text(", " .. summary)
    pinfo.cols.info = "CTH " .. summary
    if n > CTH_LEN then
        Dissector.get("data"):call(buf(CTH_LEN):tvb(), pinfo, tree)
    end
    return n
end

DissectorTable.get("udp.port"):add(CTH_UDP_PORT, cth)
