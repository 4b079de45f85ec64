// afkit_gen.C: AO2D- and ESD-shaped ROOT files written by ROOT itself (afkit bench gen ao2d|esd).
//
// Run by afkit.bench.rootgen as
//   root.exe -b -q -l 'afkit_gen.C("ao2d|esd", "TMP", "FINAL", EVENTS, BYTES_PER_EVENT, COMPRESSION, SEED, DF_EVENTS, "PARAMS")'
// It writes TMP (the caller renames it to FINAL); when FINAL exists and holds the same PARAMS it
// writes nothing and says "kept". Lines on stdout for the caller: "afkit-gen: progress E N BYTES",
// "afkit-gen: kept" (or "differs" when FINAL holds other PARAMS; FINAL "" skips the check),
// "afkit-gen: done {json}".
//
// Layouts (docs/benchmarks.md, "AO2D- and ESD-shaped files"):
// - ao2d: as O2's AOD writer (Framework/Core DataOutputDirector, TableTreeHelpers): one TDirectory
//   DF_<n> per time frame, in it one TTree per table, named "O2" + the table's lower-case
//   description (O2bc, O2collision, O2track, O2trackcov, O2trackextra), one branch per column with
//   a leaf list (fPosX/F, fIndexCollisions/I ...), basket size max(32000, 1024 + size x rows) so a
//   table is one basket per column per DF; floats truncated like the AOD producer's masks; a
//   metaData TMap at the top. Column names and types: AnalysisDataModel.h (BCs_000,
//   Collisions_000, StoredTracks, StoredTracksCov, StoredTracksExtra_000).
// - esd: as AliRoot's AliESDEvent::WriteToTree (STEER/ESD/AliESDEvent.cxx): a TTree "esdTree"
//   with one branch per event object, split level 98, top-level branches of non-TClonesArray
//   objects named with a trailing "." (AliESDRun., AliESDHeader., PrimaryVertex., ...), arrays of
//   objects (Tracks, V0s, CaloClusters) as split TClonesArrays (Tracks.fP[5], Tracks.fC[15] ...),
//   plus the event's scalar leaves (fDetectorStatus/l, fNTPCClusters/I ...). The classes carry a
//   subset of AliESDtrack's, AliESDHeader's, AliESDVertex's ... members with their names and types,
//   under the prefix "Afk" (they are not AliRoot's classes).
// The track multiplicity is calibrated by a pilot in memory (TMemFile, the same compression) so
// that the file holds BYTES_PER_EVENT on-disk bytes per event (collision).

#include <TClass.h>
#include <TClonesArray.h>
#include <TDirectory.h>
#include <TFile.h>
#include <TMap.h>
#include <TMath.h>
#include <TMemFile.h>
#include <TNamed.h>
#include <TObjString.h>
#include <TObject.h>
#include <TRandom3.h>
#include <TSystem.h>
#include <TTree.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace afkgen {

inline Float_t trunc(Float_t v, UInt_t mask)
{ // the AOD producer's truncateFloatFraction: keep the mantissa bits of MASK
  UInt_t u;
  std::memcpy(&u, &v, 4);
  u &= mask;
  std::memcpy(&v, &u, 4);
  return v;
}

struct Source {
  TRandom3 rng;
  explicit Source(UInt_t seed) : rng(seed) {}
  Int_t mult(Double_t mean) { return TMath::Max(1, (Int_t)rng.Poisson(mean)); }
  Float_t pt() { return (Float_t)(0.15 + rng.Exp(0.6)); }
  Float_t eta() { return (Float_t)rng.Gaus(0, 0.8); }
  Float_t phi() { return (Float_t)rng.Uniform(0, TMath::TwoPi()); }
};

// ---------------------------------------------------------------- AO2D
struct Columns { // one table's columns: buffers bound to leaf-list branches
  TTree* tree = nullptr;
  std::vector<Float_t> f;
  std::vector<Int_t> i;
  std::vector<UInt_t> ui;
  std::vector<UShort_t> us;
  std::vector<UChar_t> ub;
  std::vector<Char_t> b;
  std::vector<ULong64_t> ul;
};

struct AO2D {
  // Column layouts (name, ROOT leaf type) as AnalysisDataModel.h declares them.
  static std::vector<std::pair<std::string, char>> bc() { return {{"fRunNumber", 'I'}, {"fGlobalBC", 'l'}, {"fTriggerMask", 'l'}}; }
  static std::vector<std::pair<std::string, char>> collision()
  {
    return {{"fIndexBCs", 'I'}, {"fPosX", 'F'}, {"fPosY", 'F'}, {"fPosZ", 'F'}, {"fCovXX", 'F'}, {"fCovXY", 'F'},
            {"fCovXZ", 'F'}, {"fCovYY", 'F'}, {"fCovYZ", 'F'}, {"fCovZZ", 'F'}, {"fFlags", 's'}, {"fChi2", 'F'},
            {"fNumContrib", 's'}, {"fCollisionTime", 'F'}, {"fCollisionTimeRes", 'F'}};
  }
  static std::vector<std::pair<std::string, char>> track()
  {
    return {{"fIndexCollisions", 'I'}, {"fTrackType", 'b'}, {"fX", 'F'}, {"fAlpha", 'F'}, {"fY", 'F'},
            {"fZ", 'F'}, {"fSnp", 'F'}, {"fTgl", 'F'}, {"fSigned1Pt", 'F'}};
  }
  static std::vector<std::pair<std::string, char>> trackcov()
  {
    return {{"fSigmaY", 'F'}, {"fSigmaZ", 'F'}, {"fSigmaSnp", 'F'}, {"fSigmaTgl", 'F'}, {"fSigma1Pt", 'F'},
            {"fRhoZY", 'B'}, {"fRhoSnpY", 'B'}, {"fRhoSnpZ", 'B'}, {"fRhoTglY", 'B'}, {"fRhoTglZ", 'B'},
            {"fRhoTglSnp", 'B'}, {"fRho1PtY", 'B'}, {"fRho1PtZ", 'B'}, {"fRho1PtSnp", 'B'}, {"fRho1PtTgl", 'B'}};
  }
  static std::vector<std::pair<std::string, char>> trackextra()
  {
    return {{"fTPCInnerParam", 'F'}, {"fFlags", 'i'}, {"fITSClusterMap", 'b'}, {"fTPCNClsFindable", 'b'},
            {"fTPCNClsFindableMinusFound", 'B'}, {"fTPCNClsFindableMinusCrossedRows", 'B'},
            {"fTPCNClsShared", 'b'}, {"fTRDPattern", 'b'}, {"fITSChi2NCl", 'F'}, {"fTPCChi2NCl", 'F'},
            {"fTRDChi2", 'F'}, {"fTOFChi2", 'F'}, {"fTPCSignal", 'F'}, {"fTRDSignal", 'F'}, {"fLength", 'F'},
            {"fTOFExpMom", 'F'}, {"fTrackEtaEMCAL", 'F'}, {"fTrackPhiEMCAL", 'F'}, {"fTrackTime", 'F'},
            {"fTrackTimeRes", 'F'}};
  }
};

// A row buffer: one 8-byte slot per column, each branch bound to its slot.
struct Table {
  TTree* tree;
  std::vector<std::pair<std::string, char>> cols;
  std::vector<ULong64_t> slot;
  Table(const char* name, std::vector<std::pair<std::string, char>> c, Long64_t rows) : cols(std::move(c)), slot(cols.size())
  {
    tree = new TTree(name, name);
    for (size_t k = 0; k < cols.size(); ++k) {
      std::string leaf = cols[k].first + "/" + cols[k].second;
      TBranch* br = tree->Branch(cols[k].first.c_str(), &slot[k], leaf.c_str());
      int size = (cols[k].second == 'l') ? 8 : (cols[k].second == 's') ? 2 : (cols[k].second == 'b' || cols[k].second == 'B') ? 1 : 4;
      br->SetBasketSize((Int_t)std::max<Long64_t>(32000, 1024 + size * rows));
    }
  }
  void setF(size_t k, Float_t v) { std::memcpy(&slot[k], &v, 4); }
  void setI(size_t k, Int_t v) { std::memcpy(&slot[k], &v, 4); }
  void setUI(size_t k, UInt_t v) { std::memcpy(&slot[k], &v, 4); }
  void setUS(size_t k, UShort_t v) { std::memcpy(&slot[k], &v, 2); }
  void setUB(size_t k, UChar_t v) { std::memcpy(&slot[k], &v, 1); }
  void setB(size_t k, Char_t v) { std::memcpy(&slot[k], &v, 1); }
  void setUL(size_t k, ULong64_t v) { std::memcpy(&slot[k], &v, 8); }
  void done() { tree->Write("", TObject::kOverwrite); delete tree; }
};

// One time frame: DF_<n> with its tables. Returns the tracks written.
Long64_t writeDF(TFile* f, Long64_t df, Int_t collisions, Double_t mean, Source& s, Long64_t firstEvent)
{
  std::string dir = "DF_" + std::to_string(df);
  f->mkdir(dir.c_str());
  f->cd(dir.c_str());
  std::vector<Int_t> mult(collisions);
  Long64_t ntracks = 0;
  for (auto& m : mult) { m = s.mult(mean); ntracks += m; }
  { // O2bc: one bunch crossing per collision
    Table t("O2bc", AO2D::bc(), collisions);
    for (Int_t c = 0; c < collisions; ++c) {
      t.setI(0, 544000); t.setUL(1, (ULong64_t)(firstEvent + c) * 3564 + (ULong64_t)s.rng.Integer(3564));
      t.setUL(2, (ULong64_t)1 << s.rng.Integer(8));
      t.tree->Fill();
    }
    t.done();
  }
  { // O2collision: vertices
    Table t("O2collision", AO2D::collision(), collisions);
    for (Int_t c = 0; c < collisions; ++c) {
      t.setI(0, c);
      t.setF(1, trunc((Float_t)s.rng.Gaus(0, 0.01), 0xFFFFFFF0)); t.setF(2, trunc((Float_t)s.rng.Gaus(0, 0.01), 0xFFFFFFF0));
      t.setF(3, trunc((Float_t)s.rng.Gaus(0, 6), 0xFFFFFFF0));
      for (int k = 4; k < 10; ++k) t.setF(k, trunc((Float_t)TMath::Abs(s.rng.Gaus(0, 1e-4)), 0xFFFFE000));
      t.setUS(10, 1); t.setF(11, trunc((Float_t)s.rng.Exp(3), 0xFFFF0000)); t.setUS(12, (UShort_t)TMath::Min(mult[c], 65535));
      t.setF(13, (Float_t)s.rng.Gaus(0, 20)); t.setF(14, trunc((Float_t)s.rng.Exp(5), 0xFFFFFF00));
      t.tree->Fill();
    }
    t.done();
  }
  Source tr(s.rng.Integer(0xFFFFFFFF)); // the track tables: same rows in the same order
  for (int table = 0; table < 3; ++table) {
    tr.rng.SetSeed(s.rng.Integer(0xFFFFFFFF));
    const char* name = table == 0 ? "O2track" : table == 1 ? "O2trackcov" : "O2trackextra";
    Table t(name, table == 0 ? AO2D::track() : table == 1 ? AO2D::trackcov() : AO2D::trackextra(), ntracks);
    for (Int_t c = 0; c < collisions; ++c) {
      for (Int_t k = 0; k < mult[c]; ++k) {
        if (table == 0) {
          Float_t pt = tr.pt(), eta = tr.eta();
          t.setI(0, c); t.setUB(1, 0);
          t.setF(2, trunc((Float_t)tr.rng.Uniform(0, 3), 0xFFFFFFF0));
          t.setF(3, trunc((Float_t)((Int_t)tr.rng.Integer(18) * TMath::Pi() / 9 - TMath::Pi() + TMath::Pi() / 18), 0xFFFFFFF0));
          t.setF(4, trunc((Float_t)tr.rng.Gaus(0, 0.05), 0xFFFFFFF0)); t.setF(5, trunc((Float_t)tr.rng.Gaus(0, 5), 0xFFFFFFF0));
          t.setF(6, trunc((Float_t)tr.rng.Uniform(-0.9, 0.9), 0xFFFFFF00));
          t.setF(7, trunc((Float_t)TMath::SinH(eta), 0xFFFFFF00));
          t.setF(8, trunc((Float_t)((tr.rng.Rndm() < 0.5 ? -1 : 1) / pt), 0xFFFFFC00));
        } else if (table == 1) {
          for (int q = 0; q < 5; ++q) t.setF(q, trunc((Float_t)tr.rng.Exp(0.02), 0xFFFFFF00));
          for (int q = 5; q < 15; ++q) t.setB(q, (Char_t)tr.rng.Gaus(0, 40));
        } else {
          t.setF(0, trunc(tr.pt(), 0xFFFFFF00)); t.setUI(1, tr.rng.Integer(16));
          t.setUB(2, (UChar_t)tr.rng.Integer(128)); t.setUB(3, (UChar_t)(120 + tr.rng.Integer(40)));
          t.setB(4, (Char_t)tr.rng.Integer(10)); t.setB(5, (Char_t)tr.rng.Integer(10)); t.setUB(6, (UChar_t)tr.rng.Integer(5));
          t.setUB(7, (UChar_t)tr.rng.Integer(64));
          for (int q = 8; q < 12; ++q) t.setF(q, trunc((Float_t)tr.rng.Exp(1.5), 0xFFFF0000));
          t.setF(12, trunc((Float_t)tr.rng.Gaus(60, 8), 0xFFFFFF00)); t.setF(13, trunc((Float_t)tr.rng.Gaus(1, 0.3), 0xFFFFFF00));
          t.setF(14, trunc((Float_t)tr.rng.Uniform(300, 500), 0xFFFFFF00)); t.setF(15, trunc(tr.pt(), 0xFFFFFF00));
          t.setF(16, trunc(tr.eta(), 0xFFFFFF00)); t.setF(17, trunc(tr.phi(), 0xFFFFFF00));
          t.setF(18, (Float_t)tr.rng.Gaus(0, 100)); t.setF(19, trunc((Float_t)tr.rng.Exp(50), 0xFFFFFF00));
        }
        t.tree->Fill();
      }
    }
    t.done();
  }
  f->cd();
  return ntracks;
}

} // namespace afkgen

// ---------------------------------------------------------------- ESD (classes at global scope for I/O)
class AfkExternalTrackParam : public TObject {
public:
  Double32_t fX = 0, fAlpha = 0;
  Double_t fP[5] = {0};
  Double_t fC[15] = {0};
  ClassDef(AfkExternalTrackParam, 1)
};
class AfkESDtrack : public AfkExternalTrackParam {
public:
  ULong64_t fFlags = 0;
  Int_t fID = 0, fLabel = 0, fITSLabel = 0, fTPCLabel = 0, fTRDLabel = 0;
  Int_t fKinkIndexes[3] = {0}, fV0Indexes[3] = {0};
  Double32_t fTrackLength = 0, fITSchi2 = 0, fTPCchi2 = 0, fTRDchi2 = 0, fTOFchi2 = 0, fGlobalChi2 = 0;
  Double32_t fITSsignal = 0, fTPCsignal = 0, fTPCsignalS = 0, fTRDsignal = 0, fTOFsignal = 0, fHMPIDsignal = 0;
  Double32_t fITSdEdxSamples[4] = {0}, fTPCPoints[4] = {0}, fTOFInfo[10] = {0};
  Double32_t fR[5] = {0}, fITSr[5] = {0}, fTPCr[5] = {0}, fTRDr[5] = {0}, fTOFr[5] = {0};
  Double32_t fTrackPhiOnEMCal = 0, fTrackEtaOnEMCal = 0, fTrackPtOnEMCal = 0;
  UShort_t fTPCncls = 0, fTPCnclsF = 0, fTPCsignalN = 0;
  UChar_t fITSClusterMap = 0, fITSSharedMap = 0, fTRDncls = 0, fTRDNchamberdEdx = 0;
  Char_t fITSncls = 0, fTRDTimBin[6] = {0};
  ClassDef(AfkESDtrack, 1)
};
class AfkESDVertex : public TObject {
public:
  Double32_t fPosition[3] = {0}, fCovXX = 0, fCovXY = 0, fCovYY = 0, fCovXZ = 0, fCovYZ = 0, fCovZZ = 0, fChi2 = 0;
  Int_t fNContributors = 0;
  ClassDef(AfkESDVertex, 1)
};
class AfkESDv0 : public TObject {
public:
  AfkExternalTrackParam fParamN, fParamP;
  Double32_t fEffMass = 0, fDcaV1Daughters = 0, fChi2V0 = 0, fPointAngle = 0, fPos[3] = {0};
  Int_t fIndex[2] = {0};
  ClassDef(AfkESDv0, 1)
};
class AfkESDCaloCluster : public TObject {
public:
  Double32_t fEnergy = 0, fGlobalPos[3] = {0}, fDispersion = 0, fChi2 = 0, fM20 = 0, fM02 = 0, fTOF = 0;
  Int_t fID = 0, fNCells = 0;
  Char_t fClusterType = 0;
  ClassDef(AfkESDCaloCluster, 1)
};
class AfkESDHeader : public TObject {
public:
  ULong64_t fTriggerMask = 0, fTriggerMaskNext50 = 0;
  UInt_t fOrbitNumber = 0, fTimeStamp = 0, fEventType = 0, fEventSpecie = 0, fPeriodNumber = 0;
  Int_t fEventNumberInFile = 0;
  UShort_t fBunchCrossNumber = 0;
  UChar_t fTriggerCluster = 0;
  UInt_t fL0TriggerInputs = 0, fL1TriggerInputs = 0;
  UShort_t fL2TriggerInputs = 0;
  ClassDef(AfkESDHeader, 1)
};
class AfkESDRun : public TObject {
public:
  Double32_t fCurrentL3 = 0, fCurrentDip = 0, fBeamEnergy = 0, fDiamondXY[2] = {0}, fDiamondCovXY[3] = {0};
  Int_t fRunNumber = 0;
  UInt_t fPeriodNumber = 0;
  ClassDef(AfkESDRun, 1)
};
class AfkMultiplicity : public TObject {
public:
  Int_t fNtracks = 0, fNsingle = 0;
  UInt_t fFiredChips[2] = {0};
  ClassDef(AfkMultiplicity, 1)
};

namespace afkgen {

struct ESD {
  AfkESDRun* run = new AfkESDRun;
  AfkESDHeader* header = new AfkESDHeader;
  AfkESDVertex* tpcv = new AfkESDVertex;
  AfkESDVertex* spdv = new AfkESDVertex;
  AfkESDVertex* pv = new AfkESDVertex;
  AfkMultiplicity* mult = new AfkMultiplicity;
  TClonesArray* tracks = new TClonesArray("AfkESDtrack", 1000);
  TClonesArray* v0s = new TClonesArray("AfkESDv0", 100);
  TClonesArray* clusters = new TClonesArray("AfkESDCaloCluster", 100);
  ULong64_t fDetectorStatus = 0;
  UInt_t fDAQDetectorPattern = 0, fDAQAttributes = 0;
  Int_t fNTPCClusters = 0, fNTPCTrackBeforeClean = 0;
  TTree* tree;
  ESD()
  { // branch by branch as AliESDEvent::WriteToTree: split level 99 - 1, buffer 32000
    tree = new TTree("esdTree", "Tree with ESD objects");
    tree->Branch("AliESDRun.", &run, 32000, 98);
    tree->Branch("AliESDHeader.", &header, 32000, 98);
    tree->Branch("TPCVertex.", &tpcv, 32000, 98);
    tree->Branch("SPDVertex.", &spdv, 32000, 98);
    tree->Branch("PrimaryVertex.", &pv, 32000, 98);
    tree->Branch("AliMultiplicity.", &mult, 32000, 98);
    tree->Branch("Tracks", &tracks, 32000, 98);
    tree->Branch("V0s", &v0s, 32000, 98);
    tree->Branch("CaloClusters", &clusters, 32000, 98);
    tree->Branch("fDetectorStatus", &fDetectorStatus, "fDetectorStatus/l");
    tree->Branch("fDAQDetectorPattern", &fDAQDetectorPattern, "fDAQDetectorPattern/i");
    tree->Branch("fDAQAttributes", &fDAQAttributes, "fDAQAttributes/i");
    tree->Branch("fNTPCClusters", &fNTPCClusters, "fNTPCClusters/I");
    tree->Branch("fNTPCTrackBeforeClean", &fNTPCTrackBeforeClean, "fNTPCTrackBeforeClean/I");
  }
  static void param(AfkExternalTrackParam* p, Source& s)
  {
    Float_t pt = s.pt();
    p->fX = s.rng.Uniform(0, 3); p->fAlpha = (Int_t)s.rng.Integer(18) * TMath::Pi() / 9 - TMath::Pi() + TMath::Pi() / 18;
    p->fP[0] = s.rng.Gaus(0, 0.05); p->fP[1] = s.rng.Gaus(0, 5); p->fP[2] = s.rng.Uniform(-0.9, 0.9);
    p->fP[3] = TMath::SinH(s.eta()); p->fP[4] = (s.rng.Rndm() < 0.5 ? -1 : 1) / pt;
    for (int q = 0; q < 15; ++q) p->fC[q] = trunc((Float_t)s.rng.Gaus(0, 1e-3), 0xFFFFFF00);
  }
  void fill(Long64_t ev, Double_t mean, Source& s)
  {
    run->fRunNumber = 244918; run->fBeamEnergy = 2510; run->fCurrentL3 = 30000; run->fCurrentDip = 6000;
    header->fEventNumberInFile = (Int_t)ev; header->fOrbitNumber = (UInt_t)s.rng.Integer(1 << 24);
    header->fBunchCrossNumber = (UShort_t)s.rng.Integer(3564); header->fTimeStamp = 1448000000 + (UInt_t)ev;
    header->fTriggerMask = (ULong64_t)1 << s.rng.Integer(50); header->fEventType = 7; header->fPeriodNumber = 0x1b;
    for (AfkESDVertex* v : {tpcv, spdv, pv}) {
      v->fPosition[0] = s.rng.Gaus(0, 0.01); v->fPosition[1] = s.rng.Gaus(0, 0.01); v->fPosition[2] = s.rng.Gaus(0, 6);
      v->fCovXX = v->fCovYY = v->fCovZZ = s.rng.Exp(1e-4); v->fChi2 = s.rng.Exp(3);
    }
    Int_t n = s.mult(mean);
    pv->fNContributors = n; mult->fNtracks = n; fNTPCClusters = 120 * n; fDetectorStatus = 0x3ffff;
    tracks->Clear();
    for (Int_t k = 0; k < n; ++k) {
      auto* t = (AfkESDtrack*)tracks->ConstructedAt(k);
      param(t, s);
      t->fFlags = s.rng.Integer(1 << 30); t->fID = k; t->fLabel = t->fITSLabel = t->fTPCLabel = t->fTRDLabel = -1;
      t->fTrackLength = s.rng.Uniform(300, 500); t->fITSchi2 = s.rng.Exp(5); t->fTPCchi2 = s.rng.Exp(100);
      t->fTRDchi2 = s.rng.Exp(5); t->fTOFchi2 = s.rng.Exp(2); t->fGlobalChi2 = s.rng.Exp(3);
      t->fITSsignal = s.rng.Gaus(80, 10); t->fTPCsignal = s.rng.Gaus(60, 8); t->fTPCsignalS = s.rng.Exp(3);
      t->fTRDsignal = s.rng.Gaus(1, 0.3); t->fTOFsignal = s.rng.Gaus(15000, 500); t->fHMPIDsignal = s.rng.Rndm();
      for (int q = 0; q < 4; ++q) { t->fITSdEdxSamples[q] = s.rng.Gaus(80, 10); t->fTPCPoints[q] = s.rng.Uniform(80, 250); }
      for (int q = 0; q < 10; ++q) t->fTOFInfo[q] = s.rng.Gaus(0, 100);
      for (int q = 0; q < 5; ++q) { t->fR[q] = t->fITSr[q] = t->fTPCr[q] = t->fTRDr[q] = t->fTOFr[q] = s.rng.Rndm(); }
      t->fTrackPhiOnEMCal = s.phi(); t->fTrackEtaOnEMCal = s.eta(); t->fTrackPtOnEMCal = s.pt();
      t->fTPCncls = (UShort_t)(60 + s.rng.Integer(100)); t->fTPCnclsF = (UShort_t)(t->fTPCncls + s.rng.Integer(10));
      t->fTPCsignalN = t->fTPCncls; t->fITSClusterMap = (UChar_t)s.rng.Integer(64); t->fITSncls = (Char_t)s.rng.Integer(7);
      t->fTRDncls = (UChar_t)s.rng.Integer(120); t->fTRDNchamberdEdx = (UChar_t)s.rng.Integer(7);
    }
    v0s->Clear();
    for (Int_t k = 0; k < n / 20; ++k) {
      auto* v = (AfkESDv0*)v0s->ConstructedAt(k);
      param(&v->fParamN, s); param(&v->fParamP, s);
      v->fEffMass = s.rng.Gaus(0.497, 0.01); v->fChi2V0 = s.rng.Exp(2); v->fPointAngle = s.rng.Exp(0.01);
      v->fIndex[0] = (Int_t)s.rng.Integer(n); v->fIndex[1] = (Int_t)s.rng.Integer(n);
    }
    clusters->Clear();
    for (Int_t k = 0; k < n / 10; ++k) {
      auto* c = (AfkESDCaloCluster*)clusters->ConstructedAt(k);
      c->fEnergy = s.rng.Exp(1); c->fGlobalPos[0] = s.rng.Gaus(0, 400); c->fGlobalPos[1] = s.rng.Gaus(0, 400);
      c->fGlobalPos[2] = s.rng.Gaus(0, 200); c->fM02 = s.rng.Exp(0.3); c->fM20 = s.rng.Exp(0.2);
      c->fTOF = s.rng.Gaus(6e-7, 1e-8); c->fID = k; c->fNCells = 1 + (Int_t)s.rng.Integer(20); c->fClusterType = 1;
    }
    tree->Fill();
  }
};

// Write EVENTS events of KIND into F (mean tracks per event MEAN); progress lines when PROGRESS.
void writeKind(TFile* f, const std::string& kind, Long64_t events, Double_t mean, Int_t dfEvents, UInt_t seed, bool progress)
{
  Source s(seed);
  Long64_t step = std::max<Long64_t>(1, events / 100);
  if (kind == "ao2d") {
    Long64_t done = 0;
    for (Long64_t df = 0; done < events; ++df) {
      Int_t n = (Int_t)std::min<Long64_t>(dfEvents, events - done);
      writeDF(f, 1000000 + df, n, mean, s, done);
      done += n;
      if (progress) std::cout << "afkit-gen: progress " << done << " " << events << " " << f->GetEND() << std::endl;
    }
    return;
  }
  f->cd();
  ESD esd;
  for (Long64_t ev = 0; ev < events; ++ev) {
    esd.fill(ev, mean, s);
    if (progress && ((ev + 1) % step == 0 || ev + 1 == events))
      std::cout << "afkit-gen: progress " << ev + 1 << " " << events << " " << f->GetEND() << std::endl;
  }
  esd.tree->Write("", TObject::kOverwrite);
}

} // namespace afkgen

void afkit_gen(const char* kind, const char* tmp, const char* final, Long64_t events, Double_t bytesPerEvent,
               Int_t compression, UInt_t seed, Int_t dfEvents, const char* params)
{
  using namespace afkgen;
  std::string k(kind);
  if (k != "ao2d" && k != "esd") {
    std::cerr << "afkit_gen: unknown kind " << kind << std::endl;
    gSystem->Exit(2);
  }
  if (final[0] && !gSystem->AccessPathName(final)) { // idempotent: kept when written with PARAMS
    std::unique_ptr<TFile> old(TFile::Open(final, "READ"));
    auto* tag = old && !old->IsZombie() ? old->Get<TNamed>("afkit_gen") : nullptr;
    std::cout << "afkit-gen: " << (tag && std::string(tag->GetTitle()) == params ? "kept" : "differs") << std::endl;
    return;
  }
  TClass::GetClass("AfkExternalTrackParam")->GetStreamerInfo(); // base classes known before the tree

  // pilot in memory: bytes per track at this compression
  Double_t guess = k == "ao2d" ? 2000 : 4000;
  Long64_t pilotEvents = k == "ao2d" ? 4 : 2;
  Double_t mean = guess;
  for (int round = 0; round < 2; ++round) {
    TMemFile pilot("afkit-pilot.root", "RECREATE", "", compression < 0 ? ROOT::RCompressionSetting::EDefaults::kUseCompiledDefault : compression);
    writeKind(&pilot, k, pilotEvents, mean, (Int_t)pilotEvents, seed + 7919, false);
    pilot.Write();
    Double_t perEvent = (Double_t)pilot.GetEND() / pilotEvents;
    mean = TMath::Max(1.0, mean * bytesPerEvent / perEvent);
  }
  std::unique_ptr<TFile> f(TFile::Open(tmp, "RECREATE", "", compression < 0 ? ROOT::RCompressionSetting::EDefaults::kUseCompiledDefault : compression));
  if (!f || f->IsZombie()) {
    std::cerr << "afkit_gen: cannot create " << tmp << std::endl;
    gSystem->Exit(1);
  }
  if (k == "ao2d") { // the AOD writer's metaData map
    TMap meta;
    meta.SetOwnerKeyValue();
    meta.Add(new TObjString("DataType"), new TObjString("RAW"));
    meta.Add(new TObjString("Run"), new TObjString("3"));
    meta.Add(new TObjString("ROOTVersion"), new TObjString(gROOT->GetVersion()));
    meta.Add(new TObjString("Generator"), new TObjString("afkit bench gen ao2d"));
    f->WriteObject(&meta, "metaData");
  }
  writeKind(f.get(), k, events, mean, dfEvents, seed, true);
  TNamed tag("afkit_gen", params);
  f->cd();
  tag.Write();
  Int_t settings = f->GetCompressionSettings();
  f->Close();
  std::cout << "afkit-gen: done {\"mean_tracks\": " << mean << ", \"compression\": " << settings
            << ", \"root_version\": \"" << gROOT->GetVersion() << "\"}" << std::endl;
}
